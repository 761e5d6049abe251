package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Pin states.
const (
	PinPinned   = "pinned"   // the live definition is the accepted one
	PinNew      = "new"      // never accepted; waits for the operator (manual mode)
	PinChanged  = "changed"  // the live definition differs from the accepted one
	PinRejected = "rejected" // the operator refused the pending definition
)

// ErrStale is returned when an operator's decision names a definition that is
// no longer the pending one: they decided on something they were not shown.
var ErrStale = errors.New("ledger: the definition changed since it was shown")

// Pin is one upstream tool's pin. Tool "" is the server's instructions.
type Pin struct {
	Server, Tool  string
	State         string
	Digest        string // accepted definition; "" when none was ever accepted
	Raw           []byte
	PendingDigest string // live definition awaiting the operator; "" when none
	PendingRaw    []byte
	UpdatedAt     time.Time
	DecodeError   string
}

// IssuerPin is the pin of a url server's sign-in: the authorization
// server's issuer, pinned at the first sign-in (mcp-guard auth). It is not a
// tool, and does not make a server seen (ServerSeen).
const IssuerPin = "oauth:issuer"

func pinSubject(server, tool string) string { return "pin:" + server + "/" + tool }

// Why a definition never seen before is pinned at once (ObservePinAs).
const (
	TrustNone         = ""                // it waits as "new" for the operator
	TrustFirstContact = "tofu"            // the server's first listing (pin.mode "tofu")
	TrustNewTools     = "trust_new_tools" // the operator trusts this server's new tools
)

// ObservePin is ObservePinAs with TrustFirstContact when tofu is set and
// TrustNone otherwise.
func (l *Ledger) ObservePin(ctx context.Context, server, tool, digest string, raw []byte, tofu bool) (Pin, error) {
	trust := TrustNone
	if tofu {
		trust = TrustFirstContact
	}
	return l.ObservePinAs(ctx, server, tool, digest, raw, trust)
}

// ObservePinAs records what an upstream listed now for one tool and returns
// the pin afterwards. A tool never seen is pinned at once when trust names
// why (the pin.added event records it) and otherwise waits as "new". A
// definition that differs from the accepted one makes the pin "changed"
// until the operator decides; the upstream going back to the accepted
// definition restores it.
func (l *Ledger) ObservePinAs(ctx context.Context, server, tool, digest string, raw []byte, trust string) (Pin, error) {
	tofu := trust != TrustNone
	var out Pin
	err := l.Write(ctx, func(tx *Tx) error {
		p, found, err := readPin(tx, server, tool)
		if err != nil {
			return err
		}
		now := tx.Now().UnixMilli()
		subject := pinSubject(server, tool)
		event := func(kind string, body map[string]any) error {
			body["server"], body["tool"] = server, tool
			_, err := tx.AppendEvent(kind, subject, body)
			return err
		}
		switch {
		case !found && tofu:
			res, err := tx.Exec(`INSERT INTO pins (server, tool, state, digest, raw, updated_at) VALUES (?, ?, ?, ?, ?, ?)`,
				server, tool, PinPinned, digest, raw, now)
			if err != nil {
				return err
			}
			if err := touchInserted(tx, "pins", res); err != nil {
				return err
			}
			p = pinRow{Pin: Pin{Server: server, Tool: tool, State: PinPinned, Digest: digest, Raw: raw}}
			out = p.Pin
			return event("pin.added", map[string]any{"digest": digest, "mode": trust})
		case !found:
			res, err := tx.Exec(`INSERT INTO pins (server, tool, state, pending_digest, pending_raw, updated_at) VALUES (?, ?, ?, ?, ?, ?)`,
				server, tool, PinNew, digest, raw, now)
			if err != nil {
				return err
			}
			if err := touchInserted(tx, "pins", res); err != nil {
				return err
			}
			p = pinRow{Pin: Pin{Server: server, Tool: tool, State: PinNew, PendingDigest: digest, PendingRaw: raw}}
			out = p.Pin
			return event("pin.new", map[string]any{"digest": digest})
		case p.Digest != "" && digest == p.Digest:
			if p.State == PinPinned {
				break
			}
			if err := tx.CAS("pins", "id", p.id, p.State, PinPinned, map[string]any{"pending_digest": nil, "pending_raw": nil, "updated_at": now}); err != nil {
				return err
			}
			from := p.State
			p.State, p.PendingDigest, p.PendingRaw = PinPinned, "", nil
			out = p.Pin
			return event("pin.restored", map[string]any{"digest": digest, "from": from})
		case trust == TrustFirstContact && p.State == PinNew && p.Digest == "" && digest == p.PendingDigest:
			// Another serve on this ledger listed the server a moment after
			// this listing's first contact began (it saw the server as known)
			// and recorded the tool as new. This listing is the first contact
			// and lists the same definition: it is pinned, as it would have
			// been without the race.
			if err := tx.CAS("pins", "id", p.id, PinNew, PinPinned, map[string]any{"digest": digest, "raw": raw, "pending_digest": nil, "pending_raw": nil, "updated_at": now}); err != nil {
				return err
			}
			p.State, p.Digest, p.Raw, p.PendingDigest, p.PendingRaw = PinPinned, digest, raw, "", nil
			out = p.Pin
			return event("pin.added", map[string]any{"digest": digest, "mode": trust})
		case digest == p.PendingDigest:
			// still the definition the operator has (or has not yet) decided on
		default:
			to := PinChanged
			if p.Digest == "" {
				to = PinNew
			}
			if err := tx.CAS("pins", "id", p.id, p.State, to, map[string]any{"pending_digest": digest, "pending_raw": raw, "updated_at": now}); err != nil {
				return err
			}
			p.State, p.PendingDigest, p.PendingRaw = to, digest, raw
			out = p.Pin
			return event("pin."+to, map[string]any{"digest": digest, "pinned": p.Digest})
		}
		out = p.Pin
		return nil
	})
	if err != nil {
		return Pin{}, fmt.Errorf("ledger: observe pin %s/%s: %w", server, tool, err)
	}
	return out, nil
}

// AcceptPin makes the pending definition the accepted one, but only if it is
// still the one with digest shown: what the operator read is what they accept.
func (l *Ledger) AcceptPin(ctx context.Context, server, tool, shown string) error {
	err := l.Write(ctx, func(tx *Tx) error {
		p, found, err := readPin(tx, server, tool)
		if err != nil {
			return err
		}
		if !found {
			return ErrNotFound
		}
		if p.PendingDigest == "" {
			return fmt.Errorf("nothing to accept: it is %s", p.State)
		}
		if p.PendingDigest != shown {
			return ErrStale
		}
		if err := tx.CAS("pins", "id", p.id, p.State, PinPinned, map[string]any{
			"digest": p.PendingDigest, "raw": p.PendingRaw, "pending_digest": nil, "pending_raw": nil,
			"updated_at": tx.Now().UnixMilli()}); err != nil {
			return err
		}
		_, err = tx.AppendEvent("pin.accepted", pinSubject(server, tool), map[string]any{
			"server": server, "tool": tool, "digest": p.PendingDigest, "previous": p.Digest, "from": p.State})
		return err
	})
	if err != nil {
		return fmt.Errorf("ledger: accept pin %s/%s: %w", server, tool, err)
	}
	return nil
}

// RejectPin refuses the pending definition with digest shown: the tool stays
// withdrawn until its upstream sends the accepted definition again (or a new
// one the operator accepts).
func (l *Ledger) RejectPin(ctx context.Context, server, tool, shown string) error {
	err := l.Write(ctx, func(tx *Tx) error {
		p, found, err := readPin(tx, server, tool)
		if err != nil {
			return err
		}
		if !found {
			return ErrNotFound
		}
		if p.PendingDigest == "" || p.State == PinRejected {
			return fmt.Errorf("nothing to reject: it is %s", p.State)
		}
		if p.PendingDigest != shown {
			return ErrStale
		}
		if err := tx.CAS("pins", "id", p.id, p.State, PinRejected, map[string]any{"updated_at": tx.Now().UnixMilli()}); err != nil {
			return err
		}
		_, err = tx.AppendEvent("pin.rejected", pinSubject(server, tool), map[string]any{
			"server": server, "tool": tool, "digest": p.PendingDigest, "pinned": p.Digest})
		return err
	})
	if err != nil {
		return fmt.Errorf("ledger: reject pin %s/%s: %w", server, tool, err)
	}
	return nil
}

type pinRow struct {
	Pin
	id int64
}

func readPin(tx *Tx, server, tool string) (pinRow, bool, error) {
	var (
		p               pinRow
		digest, pending sql.NullString
		updated         int64
	)
	err := tx.QueryRow(`SELECT id, server, tool, state, digest, raw, pending_digest, pending_raw, updated_at FROM pins WHERE server = ? AND tool = ?`,
		server, tool).Scan(&p.id, &p.Server, &p.Tool, &p.State, &digest, &p.Raw, &pending, &p.PendingRaw, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return pinRow{}, false, nil
	}
	if err != nil {
		return pinRow{}, false, err
	}
	p.Digest, p.PendingDigest = digest.String, pending.String
	p.UpdatedAt = time.UnixMilli(updated)
	return p, true, nil
}

const pinColumns = "server, tool, state, digest, raw, pending_digest, pending_raw, updated_at"

func scanPin(rows *sql.Rows) (Pin, error) {
	var (
		p               Pin
		digest, pending sql.NullString
		updated         int64
	)
	if err := rows.Scan(&p.Server, &p.Tool, &p.State, &digest, &p.Raw, &pending, &p.PendingRaw, &updated); err != nil {
		return Pin{}, err
	}
	p.Digest, p.PendingDigest = digest.String, pending.String
	p.UpdatedAt = time.UnixMilli(updated)
	switch p.State {
	case PinPinned, PinNew, PinChanged, PinRejected:
	default:
		p.DecodeError = fmt.Sprintf("state: unknown pin state %q", p.State)
	}
	return p, nil
}

// ServerSeen reports whether any pin of server is recorded: its
// instructions are pinned (or wait) from its first listing on, so a server
// mcp-guard has listed once stays seen across restarts. Trust on first use
// applies only to a server not seen.
func (l *Ledger) ServerSeen(ctx context.Context, server string) (bool, error) {
	var n int
	err := l.rdb.QueryRowContext(ctx, `SELECT count(*) FROM (SELECT 1 FROM pins WHERE server = ? AND tool <> ? LIMIT 1)`, server, IssuerPin).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("ledger: pins of %s: %w", server, err)
	}
	return n > 0, nil
}

// Pin returns one pin, or ErrNotFound.
func (l *Ledger) Pin(ctx context.Context, server, tool string) (Pin, error) {
	rows, err := l.rdb.QueryContext(ctx, "SELECT "+pinColumns+" FROM pins WHERE server = ? AND tool = ?", server, tool)
	if err != nil {
		return Pin{}, fmt.Errorf("ledger: pin %s/%s: %w", server, tool, err)
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return Pin{}, fmt.Errorf("ledger: pin %s/%s: %w", server, tool, err)
		}
		return Pin{}, fmt.Errorf("ledger: pin %s/%s: %w", server, tool, ErrNotFound)
	}
	p, err := scanPin(rows)
	if err != nil {
		return Pin{}, fmt.Errorf("ledger: pin %s/%s: %w", server, tool, err)
	}
	return p, nil
}

// Pins lists the pins of one server ("" for every server), ordered by server
// and tool, at most 10000.
func (l *Ledger) Pins(ctx context.Context, server string) ([]Pin, error) {
	q, args := "SELECT "+pinColumns+" FROM pins ORDER BY server, tool LIMIT 10000", []any{}
	if server != "" {
		q, args = "SELECT "+pinColumns+" FROM pins WHERE server = ? ORDER BY tool LIMIT 10000", []any{server}
	}
	rows, err := l.rdb.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("ledger: pins: %w", err)
	}
	defer rows.Close()
	var out []Pin
	for rows.Next() {
		p, err := scanPin(rows)
		if err != nil {
			return nil, fmt.Errorf("ledger: pins: %w", err)
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// pinsVersionQuery repeats the subject index's term so the index is used.
const pinsVersionQuery = `SELECT max(seq) FROM events WHERE subject >= 'pin:' AND subject < 'pin;'
	AND (subject < 'call:' OR subject >= 'call;')`

// PinsVersion identifies the current state of the pins: it changes whenever
// a pin event is appended (by any process), and costs one index lookup.
func (l *Ledger) PinsVersion(ctx context.Context) (int64, error) {
	var seq sql.NullInt64
	err := l.rdb.QueryRowContext(ctx, pinsVersionQuery).Scan(&seq)
	if err != nil {
		return 0, fmt.Errorf("ledger: pins version: %w", err)
	}
	return seq.Int64, nil
}
