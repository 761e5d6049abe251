package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Approval states.
const (
	ApprovalPending   = "pending"   // waits for the operator
	ApprovalApproved  = "approved"  // the operator approved what they were shown
	ApprovalDenied    = "denied"    // the operator denied it
	ApprovalExpired   = "expired"   // nobody decided in time
	ApprovalWithdrawn = "withdrawn" // the host cancelled the call
	ApprovalUsed      = "used"      // the approved call was forwarded
)

// ErrNoGrant is returned when no approved, unused, unexpired grant matches a
// request.
var ErrNoGrant = errors.New("ledger: no grant matches")

// ApprovalStart is what an ask binds: the call as it will be forwarded and
// the presentation the operator will be shown. Binding is the digest over
// all of it (computed by package approvals); it is checked on every read.
type ApprovalStart struct {
	Presentation       string
	PresentationDigest string
	Binding            string
	ExpiresAt          time.Time     // the operator may decide until then
	GrantTTL           time.Duration // an approval given after the host stopped waiting is a grant this long
	// Labels is the label set an ask for a flow is bound to ("" when no
	// flow asked): a grant from it is used only while the scope holds
	// exactly these labels (CallStart.FlowLabels).
	Labels string
}

// Approval is one approval row.
type Approval struct {
	ID, CallID              int64
	SessionID, Server, Tool string
	PinDigest, Class        string
	Rule                    int
	Args                    []byte
	Presentation            string
	PresentationDigest      string
	Binding                 string
	State, Reason           string
	CreatedAt, ExpiresAt    time.Time
	DecidedAt               time.Time
	GrantExpiresAt          time.Time // zero unless approved
	Labels                  string    // the flow's label set; "" when no flow asked
}

func approvalSubject(id int64) string { return "approval:" + strconv.FormatInt(id, 10) }

// RecordAsk records a call that waits for the operator and its approval in
// one transaction: the call in state waiting, the approval pending.
func (l *Ledger) RecordAsk(ctx context.Context, c CallStart, a ApprovalStart) (callID, approvalID int64, err error) {
	prep, err := l.prepareCall(c)
	if err != nil {
		return 0, 0, err
	}
	if a.Binding == "" || a.PresentationDigest == "" {
		return 0, 0, errors.New("ledger: record ask: an approval needs its binding and presentation digests")
	}
	err = l.Write(ctx, func(tx *Tx) error {
		if err := insertCallOp(c, prep, StateWaiting, "call.waiting", &callID)(tx); err != nil {
			return err
		}
		res, err := tx.Exec(`INSERT INTO approvals (call_id, session_id, server, tool, pin_digest, class, rule, args,
			args_digest, presentation, presentation_digest, binding, state, created_at, expires_at, grant_expires_at, labels)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			callID, c.SessionID, c.Server, c.Tool, c.PinDigest, c.Class, int64(c.Rule), nullBytes(c.Args),
			// Until the decision, grant_expires_at holds the grant's lifetime;
			// DecideApproval turns it into the deadline.
			prep.argsDigest, a.Presentation, a.PresentationDigest, a.Binding, ApprovalPending, tx.Now().UnixMilli(),
			a.ExpiresAt.UnixMilli(), a.GrantTTL.Milliseconds(), nullable(a.Labels))
		if err != nil {
			return err
		}
		if approvalID, err = res.LastInsertId(); err != nil {
			return err
		}
		tx.touch("approvals", approvalID)
		body := map[string]any{
			"id": approvalID, "call": callID, "binding": a.Binding, "presentation_digest": a.PresentationDigest,
			"expires_at": a.ExpiresAt.UnixMilli()}
		if a.Labels != "" {
			body["labels"] = a.Labels
		}
		_, err = tx.AppendEvent("approval.pending", approvalSubject(approvalID), body)
		return err
	})
	if err != nil {
		return 0, 0, fmt.Errorf("ledger: record ask %s/%s: %w", c.Server, c.Tool, err)
	}
	return callID, approvalID, nil
}

const approvalColumns = `id, call_id, session_id, server, tool, pin_digest, class, rule, args, presentation,
	presentation_digest, binding, state, reason, created_at, expires_at, decided_at, grant_expires_at, labels`

type rowScanner interface{ Scan(...any) error }

func scanApproval(r rowScanner) (Approval, error) {
	var (
		a                Approval
		rule             int64
		reason, labels   sql.NullString
		created, expires int64
		decided, grant   sql.NullInt64
	)
	if err := r.Scan(&a.ID, &a.CallID, &a.SessionID, &a.Server, &a.Tool, &a.PinDigest, &a.Class, &rule, &a.Args,
		&a.Presentation, &a.PresentationDigest, &a.Binding, &a.State, &reason, &created, &expires, &decided, &grant, &labels); err != nil {
		return Approval{}, err
	}
	if grant.Valid && decided.Valid && a.State != ApprovalPending {
		a.GrantExpiresAt = time.UnixMilli(grant.Int64)
	}
	a.Rule, a.Reason, a.Labels = int(rule), reason.String, labels.String
	a.CreatedAt, a.ExpiresAt = time.UnixMilli(created), time.UnixMilli(expires)
	if decided.Valid {
		a.DecidedAt = time.UnixMilli(decided.Int64)
	}
	return a, nil
}

// Approval reads one approval, or ErrNotFound. The caller checks its binding
// (package approvals) before acting on it.
func (l *Ledger) Approval(ctx context.Context, id int64) (Approval, error) {
	a, err := scanApproval(l.rdb.QueryRowContext(ctx, "SELECT "+approvalColumns+" FROM approvals WHERE id = ?", id))
	if errors.Is(err, sql.ErrNoRows) {
		return Approval{}, fmt.Errorf("ledger: approval %d: %w", id, ErrNotFound)
	}
	if err != nil {
		return Approval{}, fmt.Errorf("ledger: approval %d: %w", id, err)
	}
	return a, nil
}

// Approvals lists approvals newest first, one page (keyset: id < before when
// before > 0), optionally in one state.
func (l *Ledger) Approvals(ctx context.Context, state string, before int64, limit int) ([]Approval, error) {
	q, args := "SELECT "+approvalColumns+" FROM approvals", []any{}
	switch {
	case state != "" && before > 0:
		q, args = q+" WHERE state = ? AND id < ?", []any{state, before}
	case state != "":
		q, args = q+" WHERE state = ?", []any{state}
	case before > 0:
		q, args = q+" WHERE id < ?", []any{before}
	}
	rows, err := l.rdb.QueryContext(ctx, q+" ORDER BY id DESC LIMIT ?", append(args, clampLimit(limit))...)
	if err != nil {
		return nil, fmt.Errorf("ledger: approvals: %w", err)
	}
	defer rows.Close()
	var out []Approval
	for rows.Next() {
		a, err := scanApproval(rows)
		if err != nil {
			return nil, fmt.Errorf("ledger: approvals: %w", err)
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// A Decider checks a stored approval before a decision applies to it: it
// refuses a row that no longer matches its binding, and returns the digest
// of the one presentation a decision on it may name (package approvals: the
// presentation that shows every byte).
type Decider func(Approval) (string, error)

// DecideApproval records the operator's decision on a pending approval, but
// only if check accepts the stored row (its binding) and shown is the digest
// check names (what the operator must have read). A denial also ends the
// waiting call. Of two deciders, exactly one wins; the other gets
// ErrConflict. It is the operator's terminal's decision (mcp-guard
// approve, deny, watch); DecideApprovalBy records one made elsewhere.
func (l *Ledger) DecideApproval(ctx context.Context, id int64, shown string, approve bool, reason string, check Decider) error {
	return l.DecideApprovalBy(ctx, id, shown, approve, reason, check, DecidedInTerminal)
}

// Where a decision on an approval was made, as its event records it.
const (
	DecidedInTerminal = "terminal" // mcp-guard approve, deny or watch
	DecidedInHost     = "host"     // the host's elicitation form ([approvals] in_host)
)

// DecideApprovalBy is DecideApproval for a decision made where by says,
// which the decision's event records.
func (l *Ledger) DecideApprovalBy(ctx context.Context, id int64, shown string, approve bool, reason string, check Decider, by string) error {
	err := l.Write(ctx, func(tx *Tx) error {
		a, err := scanApproval(tx.QueryRow("SELECT "+approvalColumns+" FROM approvals WHERE id = ?", id))
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		want, err := check(a)
		if err != nil {
			return err
		}
		if a.State != ApprovalPending {
			return fmt.Errorf("it is %s, not pending: %w", a.State, ErrConflict)
		}
		if tx.Now().After(a.ExpiresAt) {
			return fmt.Errorf("it expired at %s: %w", a.ExpiresAt.Format(time.RFC3339), ErrConflict)
		}
		if shown != want {
			return ErrStale
		}
		to, kind := ApprovalApproved, "approval.approved"
		if !approve {
			to, kind = ApprovalDenied, "approval.denied"
		}
		now := tx.Now().UnixMilli()
		var ttl int64
		if err := tx.QueryRow("SELECT grant_expires_at FROM approvals WHERE id = ?", id).Scan(&ttl); err != nil {
			return err
		}
		if err := tx.CAS("approvals", "id", id, ApprovalPending, to, map[string]any{
			"reason": nullable(reason), "decided_at": now, "grant_expires_at": now + ttl}); err != nil {
			return err
		}
		if !approve {
			// The call may still wait (or the host stopped waiting: released).
			err := tx.CAS("calls", "id", a.CallID, StateWaiting, StateRefused, map[string]any{"ended_at": now, "reason": "denied by the operator: " + reason})
			if err != nil && !errors.Is(err, ErrConflict) {
				return err
			}
		}
		body := map[string]any{"id": id, "call": a.CallID, "shown": shown, "reason": reason}
		if by != DecidedInTerminal { // a terminal's decision is recorded as it always was
			body["by"] = by
		}
		_, err = tx.AppendEvent(kind, approvalSubject(id), body)
		return err
	})
	if err != nil {
		return fmt.Errorf("ledger: decide approval %d: %w", id, err)
	}
	return nil
}

// CloseApproval ends a pending approval nobody decided (expired) or whose
// host cancelled the call (withdrawn); the waiting call is refused.
func (l *Ledger) CloseApproval(ctx context.Context, id int64, to string) error {
	if to != ApprovalExpired && to != ApprovalWithdrawn {
		return fmt.Errorf("ledger: close approval %d: %q is not expired or withdrawn", id, to)
	}
	err := l.Write(ctx, func(tx *Tx) error {
		var callID int64
		if err := tx.QueryRow("SELECT call_id FROM approvals WHERE id = ?", id).Scan(&callID); err != nil {
			return err
		}
		now := tx.Now().UnixMilli()
		if err := tx.CAS("approvals", "id", id, ApprovalPending, to, map[string]any{"decided_at": now}); err != nil {
			return err
		}
		if err := tx.CAS("calls", "id", callID, StateWaiting, StateRefused, map[string]any{"ended_at": now, "reason": "approval " + to}); err != nil {
			return err
		}
		_, err := tx.AppendEvent("approval."+to, approvalSubject(id), map[string]any{"id": id, "call": callID})
		return err
	})
	if err != nil {
		return fmt.Errorf("ledger: close approval %d: %w", id, err)
	}
	return nil
}

// ReleaseCall ends the call an approval held when the host stopped waiting
// (limits.approval_wait): the call is refused, and the approval stays
// pending, so the operator may still approve it as a grant for an identical
// re-issue.
func (l *Ledger) ReleaseCall(ctx context.Context, approvalID int64) error {
	err := l.Write(ctx, func(tx *Tx) error {
		var callID int64
		if err := tx.QueryRow("SELECT call_id FROM approvals WHERE id = ?", approvalID).Scan(&callID); err != nil {
			return err
		}
		if err := tx.CAS("calls", "id", callID, StateWaiting, StateRefused, map[string]any{
			"ended_at": tx.Now().UnixMilli(), "reason": "limit: approval_wait: not decided while the host waited"}); err != nil {
			return err
		}
		_, err := tx.AppendEvent("approval.released", approvalSubject(approvalID), map[string]any{"id": approvalID, "call": callID})
		return err
	})
	if err != nil {
		return fmt.Errorf("ledger: release call of approval %d: %w", approvalID, err)
	}
	return nil
}

// ConsumeGrant records a new call that an earlier approval grants: the
// approved, unused approval for the same server, tool, pin and canonical
// arguments, within its grant lifetime, moves to used and the call is
// recorded as started, in one transaction. Of two consumers exactly one wins;
// without a grant it returns ErrNoGrant.
func (l *Ledger) ConsumeGrant(ctx context.Context, c CallStart, check func(Approval) error) (callID, approvalID int64, err error) {
	prep, err := l.prepareCall(c)
	if err != nil {
		return 0, 0, err
	}
	err = l.Write(ctx, func(tx *Tx) error {
		now := tx.Now().UnixMilli()
		a, err := scanApproval(tx.QueryRow("SELECT "+approvalColumns+` FROM approvals
			WHERE server = ? AND tool = ? AND args_digest = ? AND state = ? AND pin_digest = ? AND grant_expires_at > ?
			AND coalesce(labels, '') = ?
			ORDER BY id LIMIT 1`, c.Server, c.Tool, prep.argsDigest, ApprovalApproved, c.PinDigest, now, c.FlowLabels))
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNoGrant
		}
		if err != nil {
			return err
		}
		if err := check(a); err != nil {
			return err
		}
		var callState string
		if err := tx.QueryRow("SELECT state FROM calls WHERE id = ?", a.CallID).Scan(&callState); err != nil {
			return err
		}
		if callState == StateWaiting { // its own call still waits: that call runs it, not a re-issue
			return ErrNoGrant
		}
		if err := tx.CAS("approvals", "id", a.ID, ApprovalApproved, ApprovalUsed, nil); err != nil {
			return err
		}
		approvalID = a.ID
		c.Decision = "grant"
		c.Reason = "approval " + strconv.FormatInt(a.ID, 10)
		return insertCallOp(c, prep, StateStarted, "call.started", &callID)(tx)
	})
	if err != nil {
		return 0, 0, fmt.Errorf("ledger: consume grant for %s/%s: %w", c.Server, c.Tool, err)
	}
	return callID, approvalID, nil
}

// UseApproval moves an approved approval to used and its call from waiting
// to started, in one transaction, before the call is forwarded: an approval
// runs its call once.
func (l *Ledger) UseApproval(ctx context.Context, id int64, check func(Approval) error) error {
	err := l.Write(ctx, func(tx *Tx) error {
		a, err := scanApproval(tx.QueryRow("SELECT "+approvalColumns+" FROM approvals WHERE id = ?", id))
		if err != nil {
			return err
		}
		if err := check(a); err != nil {
			return err
		}
		if err := tx.CAS("approvals", "id", id, ApprovalApproved, ApprovalUsed, nil); err != nil {
			return err
		}
		if err := tx.CAS("calls", "id", a.CallID, StateWaiting, StateStarted, nil); err != nil {
			return err
		}
		_, err = tx.AppendEvent("call.started", callSubject(a.CallID), map[string]any{"id": a.CallID, "approval": id})
		return err
	})
	if err != nil {
		return fmt.Errorf("ledger: use approval %d: %w", id, err)
	}
	return nil
}
