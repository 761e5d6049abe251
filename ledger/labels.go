package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"time"
)

// How a label left its scope (labels.ended_by).
const (
	LabelDeclassified = "declassify"  // the operator's mcp-guard declassify
	LabelScopeEnded   = "scope ended" // none of the scope's processes was alive for the grace period
)

// Label is one label a scope holds, with the call that brought it.
type Label struct {
	Scope, Label string
	CallID       int64
	SessionID    string
	GainedAt     time.Time
	// The call that brought it, as the ledger recorded it.
	Kind, Server, Tool string
	Args               []byte
}

func scopeSubject(scope string) string { return "scope:" + scope }

// JoinScope records that session serves the host of scope: its requests
// read and add the scope's labels. When none of the scope's other sessions
// has been alive within grace (the host restarted), the labels it held end
// first, recorded. It returns the labels that ended.
func (l *Ledger) JoinScope(ctx context.Context, session, scope string, grace time.Duration) ([]string, error) {
	if scope == "" {
		return nil, errors.New("ledger: join scope: empty scope")
	}
	var ended []string
	err := l.Write(ctx, func(tx *Tx) error {
		var err error
		if ended, err = expireScope(tx, scope, grace, l.opts.LeaseTTL); err != nil {
			return err
		}
		if _, err := tx.Exec(`INSERT INTO scopes (session_id, scope, joined_at) VALUES (?, ?, ?)`, session, scope, tx.Now().UnixMilli()); err != nil {
			return fmt.Errorf("ledger: join scope %q: %w", scope, err)
		}
		tx.touch("scopes", session)
		_, err = tx.AppendEvent("scope.joined", scopeSubject(scope), map[string]any{"scope": scope, "session": session})
		return err
	})
	if err != nil {
		return nil, err
	}
	return ended, nil
}

// ExpireScopes ends the labels of every scope none of whose sessions has
// been alive within grace, recorded (event "labels.ended" per scope), and
// returns those scopes.
func (l *Ledger) ExpireScopes(ctx context.Context, grace time.Duration) ([]string, error) {
	var scopes []string
	err := l.Write(ctx, func(tx *Tx) error {
		scopes = scopes[:0]
		rows, err := tx.Query(`SELECT DISTINCT scope FROM labels WHERE ended_at IS NULL ORDER BY scope`)
		if err != nil {
			return fmt.Errorf("ledger: expire scopes: %w", err)
		}
		var all []string
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				return fmt.Errorf("ledger: expire scopes: %w", err)
			}
			all = append(all, s)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("ledger: expire scopes: %w", err)
		}
		rows.Close()
		for _, s := range all {
			ended, err := expireScope(tx, s, grace, l.opts.LeaseTTL)
			if err != nil {
				return err
			}
			if len(ended) > 0 {
				scopes = append(scopes, s)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return scopes, nil
}

// scopeAliveQuery is when the scope last had a live session: a session
// not ended is alive until its heartbeat is older than the lease; an ended
// one was alive until it ended.
const scopeAliveQuery = `SELECT max(CASE WHEN s.ended_at IS NULL THEN s.heartbeat_at + ? ELSE s.ended_at END)
	FROM scopes j JOIN sessions s ON s.id = j.session_id WHERE j.scope = ?`

// expireScope ends scope's labels when no session of it has been alive
// within grace.
func expireScope(tx *Tx, scope string, grace, lease time.Duration) ([]string, error) {
	now := tx.Now().UnixMilli()
	var last sql.NullInt64
	if err := tx.QueryRow(scopeAliveQuery, lease.Milliseconds(), scope).Scan(&last); err != nil {
		return nil, fmt.Errorf("ledger: scope %q: %w", scope, err)
	}
	if last.Valid && last.Int64+grace.Milliseconds() > now {
		return nil, nil
	}
	why := "no process of the scope has been alive for " + grace.String()
	ids, labels, err := liveLabels(tx, scope, "")
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	for _, id := range ids {
		if err := endLabel(tx, id, now, LabelScopeEnded, why); err != nil {
			return nil, err
		}
	}
	_, err = tx.AppendEvent("labels.ended", scopeSubject(scope), map[string]any{"scope": scope, "labels": labels, "reason": why})
	return labels, err
}

// liveLabels lists the live label rows of scope (only label, unless "").
func liveLabels(tx *Tx, scope, label string) (ids []int64, labels []string, err error) {
	rows, err := tx.Query(`SELECT id, label FROM labels WHERE scope = ? AND ended_at IS NULL AND (? = '' OR label = ?) ORDER BY label`, scope, label, label)
	if err != nil {
		return nil, nil, fmt.Errorf("ledger: labels of %q: %w", scope, err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var l string
		if err := rows.Scan(&id, &l); err != nil {
			return nil, nil, fmt.Errorf("ledger: labels of %q: %w", scope, err)
		}
		ids, labels = append(ids, id), append(labels, l)
	}
	return ids, labels, rows.Err()
}

func endLabel(tx *Tx, id, now int64, by, why string) error {
	res, err := tx.Exec(`UPDATE labels SET ended_at = ?, ended_by = ?, end_reason = ? WHERE id = ? AND ended_at IS NULL`, now, by, why, id)
	if err != nil {
		return fmt.Errorf("ledger: end label %d: %w", id, err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return fmt.Errorf("ledger: end label %d: %w", id, ErrConflict)
	}
	tx.touch("labels", id)
	return nil
}

// GainLabels records that call, made in session under scope, brought
// labels into scope: its result reached the host. A label the scope
// already holds keeps the call that first brought it. Each label gained is
// its own event ("label.gained", with the call). It returns the labels
// gained now.
func (l *Ledger) GainLabels(ctx context.Context, scope, session string, call int64, labels []string) ([]string, error) {
	if scope == "" {
		return nil, errors.New("ledger: gain labels: empty scope")
	}
	var gained []string
	err := l.Write(ctx, func(tx *Tx) error {
		gained = gained[:0]
		for _, lb := range labels {
			res, err := tx.Exec(`INSERT OR IGNORE INTO labels (scope, label, call_id, session_id, gained_at) VALUES (?, ?, ?, ?, ?)`,
				scope, lb, call, session, tx.Now().UnixMilli())
			if err != nil {
				return fmt.Errorf("ledger: gain label %q: %w", lb, err)
			}
			if n, err := res.RowsAffected(); err != nil {
				return fmt.Errorf("ledger: gain label %q: %w", lb, err)
			} else if n == 0 {
				continue // held already
			}
			if err := touchInserted(tx, "labels", res); err != nil {
				return err
			}
			if _, err := tx.AppendEvent("label.gained", scopeSubject(scope), map[string]any{
				"scope": scope, "label": lb, "call": call, "session": session}); err != nil {
				return err
			}
			gained = append(gained, lb)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("ledger: scope %q: %w", scope, err)
	}
	return gained, nil
}

// Declassify ends label in scope on the operator's word, recorded with
// reason (event "label.declassified"). ErrNotFound: the scope does not
// hold it.
func (l *Ledger) Declassify(ctx context.Context, scope, label, reason string) (call int64, err error) {
	err = l.Write(ctx, func(tx *Tx) error {
		var id int64
		err := tx.QueryRow(`SELECT id, call_id FROM labels WHERE scope = ? AND label = ? AND ended_at IS NULL`, scope, label).Scan(&id, &call)
		if errors.Is(err, sql.ErrNoRows) {
			return ErrNotFound
		}
		if err != nil {
			return err
		}
		if err := endLabel(tx, id, tx.Now().UnixMilli(), LabelDeclassified, reason); err != nil {
			return err
		}
		_, err = tx.AppendEvent("label.declassified", scopeSubject(scope), map[string]any{
			"scope": scope, "label": label, "call": call, "reason": reason})
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("ledger: declassify %s in %q: %w", label, scope, err)
	}
	return call, nil
}

// scopeLabelsQuery reads a scope's live labels through labels_live.
const scopeLabelsQuery = `SELECT l.scope, l.label, l.call_id, l.session_id, l.gained_at, c.kind, c.server, c.tool, ` + cArgs + `
	FROM labels l INDEXED BY labels_live JOIN calls c ON c.id = l.call_id
	WHERE l.scope = ? AND l.ended_at IS NULL ORDER BY l.label`

// ScopeLabels is the labels scope holds now, each with the call that
// brought it, sorted by label. It reads one index range.
func (l *Ledger) ScopeLabels(ctx context.Context, scope string) ([]Label, error) {
	st, err := l.stmt(ctx, scopeLabelsQuery)
	if err != nil {
		return nil, fmt.Errorf("ledger: labels of %q: %w", scope, err)
	}
	rows, err := st.QueryContext(ctx, scope)
	if err != nil {
		return nil, fmt.Errorf("ledger: labels of %q: %w", scope, err)
	}
	out, err := scanLabels(rows)
	if err != nil {
		return nil, fmt.Errorf("ledger: labels of %q: %w", scope, err)
	}
	return out, nil
}

// SessionScope is the scope session joined; ErrNotFound if none.
func (l *Ledger) SessionScope(ctx context.Context, session string) (string, error) {
	var scope string
	err := l.rdb.QueryRowContext(ctx, `SELECT scope FROM scopes WHERE session_id = ?`, session).Scan(&scope)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("ledger: session %s: %w", session, ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("ledger: session %s: %w", session, err)
	}
	return scope, nil
}

// ScopeSession is one session of a scope, as mcp-guard sessions lists it.
type ScopeSession struct {
	ID, Kind, Host string
	PID            int
	StartedAt      time.Time
	Alive          bool // not ended, and its heartbeat within the lease
}

// Scope is one label scope: its sessions and live labels.
type Scope struct {
	Name     string
	Sessions []ScopeSession
	Labels   []Label
}

// Scopes lists every scope with a live session or a live label, by name.
func (l *Ledger) Scopes(ctx context.Context) ([]Scope, error) {
	cutoff := l.opts.Now().UnixMilli() - l.opts.LeaseTTL.Milliseconds()
	rows, err := l.rdb.QueryContext(ctx, `SELECT j.scope, s.id, s.kind, s.host, s.pid, s.started_at,
		s.ended_at IS NULL AND s.heartbeat_at >= ?
		FROM scopes j JOIN sessions s ON s.id = j.session_id
		WHERE (s.ended_at IS NULL AND s.heartbeat_at >= ?) OR j.scope IN (SELECT scope FROM labels WHERE ended_at IS NULL)
		ORDER BY j.scope, s.started_at`, cutoff, cutoff)
	if err != nil {
		return nil, fmt.Errorf("ledger: scopes: %w", err)
	}
	defer rows.Close()
	var out []Scope
	for rows.Next() {
		var name string
		var s ScopeSession
		var pid, started int64
		if err := rows.Scan(&name, &s.ID, &s.Kind, &s.Host, &pid, &started, &s.Alive); err != nil {
			return nil, fmt.Errorf("ledger: scopes: %w", err)
		}
		s.PID, s.StartedAt = int(pid), time.UnixMilli(started)
		if len(out) == 0 || out[len(out)-1].Name != name {
			out = append(out, Scope{Name: name})
		}
		last := &out[len(out)-1]
		last.Sessions = append(last.Sessions, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("ledger: scopes: %w", err)
	}
	rows.Close()
	for i := range out {
		if out[i].Labels, err = l.ScopeLabels(ctx, out[i].Name); err != nil {
			return nil, err
		}
	}
	return slices.Clip(out), nil
}

// labelEventsQuery pages the events of label scopes, newest first, through
// the subject index (it repeats the index's term).
const labelEventsQuery = `SELECT seq, at, kind, subject, body FROM events INDEXED BY events_subject_seq
	WHERE subject >= 'scope:' AND subject < 'scope;' AND (subject < 'call:' OR subject >= 'call;') AND (? = 0 OR seq < ?)
	ORDER BY seq DESC LIMIT ?`

// LabelEvents returns up to limit events of label scopes (scope.joined,
// label.gained, label.declassified, labels.ended) before seq before (0:
// the newest), newest first. Each is a chain event: Verify covers it.
func (l *Ledger) LabelEvents(ctx context.Context, before int64, limit int) ([]Event, error) {
	rows, err := l.rdb.QueryContext(ctx, labelEventsQuery, before, before, clampLimit(limit))
	if err != nil {
		return nil, fmt.Errorf("ledger: label events: %w", err)
	}
	defer rows.Close()
	var out []Event
	for rows.Next() {
		var raw [5]any
		if err := rows.Scan(&raw[0], &raw[1], &raw[2], &raw[3], &raw[4]); err != nil {
			return nil, fmt.Errorf("ledger: label events: %w", err)
		}
		out = append(out, decodeEvent(raw))
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("ledger: label events: %w", err)
	}
	return out, nil
}
