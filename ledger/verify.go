package ledger

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"

	"github.com/mcp-guard/mcp-guard/internal/canon"
)

// VerifyReport is the result of Verify. OK is false when tampering was found;
// BadSeq is then the first seq that is wrong (or missing) and Problem says
// what is wrong. When the chain is intact but a bound row is not what the
// chain says (edited, deleted or inserted), Table and Key name the row and
// BadSeq is the event that last bound it (0 for a row no event binds).
type VerifyReport struct {
	Events  int64 // events checked
	OK      bool
	BadSeq  int64
	Problem string
	Rows    int64  // bound rows checked against the chain
	Table   string // the table of the first row that differs
	Key     string // its primary key
	// Column is, for an edited calls row, the first column found to
	// differ from the event that recorded the call (empty when the edit
	// is in a column that event does not hold).
	Column string
}

const verifyPage = 1000

// Verify walks the whole event chain in one read snapshot, page by page,
// recomputing every hash and checking every prev link, that seqs run from 1
// without gaps, and that the chain head names the last event. It returns an
// error only when it could not read the ledger; tampering is reported in the
// VerifyReport.
func (l *Ledger) Verify(ctx context.Context) (VerifyReport, error) {
	tx, err := l.rdb.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return VerifyReport{}, fmt.Errorf("ledger: verify: %w", err)
	}
	defer tx.Rollback()

	var rep VerifyReport
	bad := func(seq int64, format string, a ...any) (VerifyReport, error) {
		markBad(&rep, seq, format, a...)
		return rep, nil
	}
	var headSeq int64
	var headHash string
	switch err := tx.QueryRowContext(ctx, "SELECT seq, hash FROM chain_head WHERE id = 1").Scan(&headSeq, &headHash); {
	case err == sql.ErrNoRows:
		return bad(0, "the chain head row is missing")
	case err != nil:
		return rep, fmt.Errorf("ledger: verify: read chain head: %w", err)
	}

	prevSeq, prevHash := int64(0), genesisHash
	want := expectedRows{}
	for {
		n, stop, err := l.verifyPage(ctx, tx, &rep, &prevSeq, &prevHash, want)
		if err != nil || stop {
			return rep, err
		}
		if n < verifyPage {
			break
		}
	}
	switch {
	case headSeq > prevSeq:
		return bad(prevSeq+1, "truncated: the chain head says the last event is seq %d, but the last row is seq %d", headSeq, prevSeq)
	case headSeq < prevSeq:
		return bad(headSeq+1, "the chain head says the last event is seq %d, but rows go on to seq %d (appended outside mcp-guard?)", headSeq, prevSeq)
	case headHash != prevHash:
		return bad(prevSeq, "the chain head's hash does not match the last event's hash")
	}
	if stop, err := l.verifyRows(ctx, tx, &rep, want); err != nil || stop {
		return rep, err
	}
	rep.OK = true
	return rep, nil
}

// verifyPage checks the next page of events after *prevSeq. stop is true when
// a problem was recorded in rep.
func (l *Ledger) verifyPage(ctx context.Context, tx *sql.Tx, rep *VerifyReport, prevSeq *int64, prevHash *string, expect expectedRows) (n int, stop bool, err error) {
	rows, err := tx.QueryContext(ctx,
		"SELECT seq, at, kind, subject, body, prev_hash, hash FROM events WHERE seq > ? ORDER BY seq LIMIT ?",
		*prevSeq, verifyPage)
	if err != nil {
		return 0, false, fmt.Errorf("ledger: verify: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		n++
		var (
			seq, at                       int64
			kind, subject, prevH, storedH string
			body                          []byte
		)
		if err := rows.Scan(&seq, &at, &kind, &subject, &body, &prevH, &storedH); err != nil {
			markBad(rep, *prevSeq+1, "row after seq %d does not decode: %v", *prevSeq, err)
			return n, true, nil
		}
		rep.Events++
		want := *prevSeq + 1
		switch {
		case seq < want:
			markBad(rep, seq, "seq %d is out of order (expected %d)", seq, want)
			return n, true, nil
		case seq > want:
			markBad(rep, want, "deleted: seq %d is missing (the row after seq %d is seq %d)", want, *prevSeq, seq)
			return n, true, nil
		case prevH != *prevHash:
			markBad(rep, seq, "prev link broken: its prev_hash is not the hash of seq %d (a row was inserted, deleted or reordered)", *prevSeq)
			return n, true, nil
		}
		canonical, err := canon.Canonical(body)
		if err != nil {
			markBad(rep, seq, "edited: body is not valid JSON: %v", err)
			return n, true, nil
		}
		if !bytes.Equal(canonical, body) {
			markBad(rep, seq, "edited: body is not in canonical form")
			return n, true, nil
		}
		h, err := eventHash(seq, at, kind, subject, body, prevH)
		if err != nil {
			markBad(rep, seq, "edited: cannot hash the row: %v", err)
			return n, true, nil
		}
		if h != storedH {
			markBad(rep, seq, "edited: hash mismatch (the row's content is not what was hashed)")
			return n, true, nil
		}
		if err := expect.replay(seq, kind, body); err != nil {
			markBad(rep, seq, "its rows binding does not decode: %v", err)
			return n, true, nil
		}
		*prevSeq, *prevHash = seq, storedH
	}
	if err := rows.Err(); err != nil {
		return n, false, fmt.Errorf("ledger: verify: %w", err)
	}
	return n, false, nil
}

func markBad(rep *VerifyReport, seq int64, format string, a ...any) {
	rep.BadSeq = seq
	rep.Problem = fmt.Sprintf(format, a...)
}
