package ledger

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
)

// CallFilter selects calls for Calls. Empty fields do not filter.
type CallFilter struct {
	Server, Tool, State string
	Kind                string    // tool, prompt or resource
	Since               time.Time // started at or after; applied on top of the other filters' index walk
	Before              int64     // id < Before when > 0 (the keyset cursor: the last id shown)
	Limit               int       // default 50, at most 1000
}

// CallRow is one call as stored. A row that does not decode has DecodeError
// set ("args: ...; state: ...") and its other fields filled as far as they
// could be; such a row must not be acted upon.
type CallRow struct {
	ID                                                     int64
	Kind                                                   string // tool, prompt or resource
	SessionID, RequestID, Server, Tool, Exposed, PinDigest string
	Args, ArgsInvalid                                      []byte
	ArgsDigest, Decision                                   string
	Rule                                                   int
	Class, Reason, State                                   string
	StartedAt, EndedAt                                     time.Time
	Duration                                               time.Duration
	ResultDigest                                           string
	ResultBytes                                            int64
	IsError                                                bool
	Err                                                    string
	Late                                                   *Outcome
	DecodeError                                            string
}

// Event is one row of the hash chain. Body is its canonical JSON, unless it
// does not decode (DecodeError set, Body nil).
type Event struct {
	Seq           int64
	At            time.Time
	Kind, Subject string
	Body          []byte
	DecodeError   string
}

const (
	defaultLimit = 50
	maxLimit     = 1000
)

func clampLimit(n int) int {
	switch {
	case n <= 0:
		return defaultLimit
	case n > maxLimit:
		return maxLimit
	}
	return n
}

// A call's arguments are in its row, or in call_args when they are long
// (argsApart): callsArgs reads them for a row of calls, cArgs for one of
// calls named c.
const (
	callsArgs = "coalesce(calls.args, (SELECT a.args FROM call_args a WHERE a.call_id = calls.id))"
	cArgs     = "coalesce(c.args, (SELECT a.args FROM call_args a WHERE a.call_id = c.id))"
)

const callColumns = `id, session_id, request_id, server, tool, exposed, pin_digest, ` + callsArgs + `, args_invalid,
	args_digest, decision, rule, class, reason, state, started_at, ended_at, duration_ms,
	result_digest, result_bytes, is_error, error, late_at, late_state, late_duration_ms,
	late_result_digest, late_result_bytes, late_is_error, late_error, kind`

// Calls lists calls newest first, one keyset page: pass the last ID shown
// as Before for the next page. Every filter is served by an index ending in
// id; a row that does not decode is returned with DecodeError set.
func (l *Ledger) Calls(ctx context.Context, f CallFilter) ([]CallRow, error) {
	q, args := callsQuery(f)
	st, err := l.stmt(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("ledger: list calls: %w", err)
	}
	rows, err := st.QueryContext(ctx, args...)
	if err != nil {
		return nil, fmt.Errorf("ledger: list calls: %w", err)
	}
	defer rows.Close()
	var out []CallRow
	for rows.Next() {
		r, err := scanCall(rows)
		if err != nil {
			return nil, fmt.Errorf("ledger: list calls: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("ledger: list calls: %w", err)
	}
	return out, nil
}

// stmt returns the reader statement for q, prepared once per Ledger. There
// are at most 64 listing shapes (6 optional filters).
func (l *Ledger) stmt(ctx context.Context, q string) (*sql.Stmt, error) {
	l.stmtMu.Lock()
	defer l.stmtMu.Unlock()
	if l.stmts == nil {
		return nil, ErrClosed
	}
	if st, ok := l.stmts[q]; ok {
		return st, nil
	}
	st, err := l.rdb.PrepareContext(ctx, q)
	if err != nil {
		return nil, err
	}
	l.stmts[q] = st
	return st, nil
}

// callsQuery builds the keyset query for f.
func callsQuery(f CallFilter) (string, []any) {
	var where []string
	var args []any
	if f.Server != "" {
		where, args = append(where, "server = ?"), append(args, f.Server)
	}
	if f.Tool != "" {
		where, args = append(where, "tool = ?"), append(args, f.Tool)
	}
	// The state and kind indexes leave out the common "done" and "tool"
	// (migration5); other values repeat the index's term so it is used.
	// "done" and "tool" walk the ids down: most rows match.
	if f.State != "" {
		where, args = append(where, "state = ?"), append(args, f.State)
		if f.State != StateDone {
			where = append(where, "state <> 'done'")
		}
	}
	if f.Kind != "" {
		where, args = append(where, "kind = ?"), append(args, f.Kind)
		if f.Kind != KindTool {
			where = append(where, "kind <> 'tool'")
		}
	}
	if !f.Since.IsZero() {
		where, args = append(where, "started_at >= ?"), append(args, f.Since.UnixMilli())
	}
	if f.Before > 0 {
		where, args = append(where, "id < ?"), append(args, f.Before)
	}
	q := "SELECT " + callColumns + " FROM calls"
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY id DESC LIMIT ?"
	return q, append(args, clampLimit(f.Limit))
}

// Call returns one call, or an error wrapping ErrNotFound.
func (l *Ledger) Call(ctx context.Context, id int64) (CallRow, error) {
	rows, err := l.rdb.QueryContext(ctx, "SELECT "+callColumns+" FROM calls WHERE id = ?", id)
	if err != nil {
		return CallRow{}, fmt.Errorf("ledger: call %d: %w", id, err)
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return CallRow{}, fmt.Errorf("ledger: call %d: %w", id, err)
		}
		return CallRow{}, fmt.Errorf("ledger: call %d: %w", id, ErrNotFound)
	}
	r, err := scanCall(rows)
	if err != nil {
		return CallRow{}, fmt.Errorf("ledger: call %d: %w", id, err)
	}
	return r, nil
}

// Events returns up to limit events after afterSeq, oldest first (for
// following the ledger: pass the last Seq seen). limit defaults to 50, at
// most 1000.
func (l *Ledger) Events(ctx context.Context, afterSeq int64, limit int) ([]Event, error) {
	rows, err := l.rdb.QueryContext(ctx,
		"SELECT seq, at, kind, subject, body FROM events WHERE seq > ? ORDER BY seq LIMIT ?",
		afterSeq, clampLimit(limit))
	if err != nil {
		return nil, fmt.Errorf("ledger: events: %w", err)
	}
	defer rows.Close()
	var out []Event
	for rows.Next() {
		var raw [5]any
		if err := rows.Scan(&raw[0], &raw[1], &raw[2], &raw[3], &raw[4]); err != nil {
			return nil, fmt.Errorf("ledger: events: %w", err)
		}
		out = append(out, decodeEvent(raw))
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("ledger: events: %w", err)
	}
	return out, nil
}

// scanCall scans into untyped values, so a column of an unexpected type
// becomes a DecodeError instead of a failed Scan.
func scanCall(rows *sql.Rows) (CallRow, error) {
	var raw [30]any
	ptrs := make([]any, len(raw))
	for i := range raw {
		ptrs[i] = &raw[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		return CallRow{}, err
	}
	return decodeCall(raw), nil
}
