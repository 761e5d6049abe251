package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// SessionEntry is one step of a session's history as its limits count it:
// a call decided in the session, or (Reset) an operator's reset.
type SessionEntry struct {
	Reset                                            bool
	ID                                               int64
	Kind, Server, Tool, ArgsDigest, Decision, Reason string
	At                                               time.Time
}

// sessionCallsQuery scans the calls: no index holds a call's session
// (migration5 dropped it, so that a call's commit writes one page fewer).
// Only explain --session runs it, once.
const sessionCallsQuery = `SELECT id, kind, server, tool, coalesce(args_digest, ''), decision, coalesce(reason, ''), started_at
	FROM calls WHERE session_id = ? ORDER BY id`

// resetsQuery repeats the subject index's term so the index is used.
const resetsQuery = `SELECT at FROM events WHERE subject = ? AND (subject < 'call:' OR subject >= 'call;') AND at >= ? ORDER BY seq`

// SessionHistory returns the calls recorded under a session, oldest first,
// with the operator's resets recorded since it started placed among them
// by time. It wraps ErrNotFound when there is no such session.
func (l *Ledger) SessionHistory(ctx context.Context, sessionID string) ([]SessionEntry, error) {
	var started int64
	err := l.rdb.QueryRowContext(ctx, "SELECT started_at FROM sessions WHERE id = ?", sessionID).Scan(&started)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("ledger: no session %q: %w", sessionID, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("ledger: session %q: %w", sessionID, err)
	}
	var resets []int64
	rows, err := l.rdb.QueryContext(ctx, resetsQuery, resetSubject, started)
	if err != nil {
		return nil, fmt.Errorf("ledger: session %q resets: %w", sessionID, err)
	}
	for rows.Next() {
		var at int64
		if err := rows.Scan(&at); err != nil {
			rows.Close()
			return nil, fmt.Errorf("ledger: session %q resets: %w", sessionID, err)
		}
		resets = append(resets, at)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("ledger: session %q resets: %w", sessionID, err)
	}
	rows, err = l.rdb.QueryContext(ctx, sessionCallsQuery, sessionID)
	if err != nil {
		return nil, fmt.Errorf("ledger: session %q calls: %w", sessionID, err)
	}
	defer rows.Close()
	var out []SessionEntry
	for rows.Next() {
		var e SessionEntry
		var at int64
		if err := rows.Scan(&e.ID, &e.Kind, &e.Server, &e.Tool, &e.ArgsDigest, &e.Decision, &e.Reason, &at); err != nil {
			return nil, fmt.Errorf("ledger: session %q calls: %w", sessionID, err)
		}
		for len(resets) > 0 && resets[0] < at {
			out = append(out, SessionEntry{Reset: true, At: time.UnixMilli(resets[0])})
			resets = resets[1:]
		}
		e.At = time.UnixMilli(at)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("ledger: session %q calls: %w", sessionID, err)
	}
	for _, at := range resets {
		out = append(out, SessionEntry{Reset: true, At: time.UnixMilli(at)})
	}
	return out, nil
}

// LatestSession is the session of the newest call recorded, the one an
// operator asking "what would serve decide next" usually means. It wraps
// ErrNotFound when no call was recorded.
func (l *Ledger) LatestSession(ctx context.Context) (string, error) {
	var id string
	err := l.rdb.QueryRowContext(ctx, "SELECT session_id FROM calls ORDER BY id DESC LIMIT 1").Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("ledger: latest session: no call recorded: %w", ErrNotFound)
	}
	if err != nil {
		return "", fmt.Errorf("ledger: latest session: %w", err)
	}
	return id, nil
}
