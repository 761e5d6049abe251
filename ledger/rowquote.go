package ledger

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"sync"
)

// A row the ledger writes itself is digested from the values it wrote, not
// read back: quoteRow builds, in Go, the string boundQuery.returning would
// return. The tables are STRICT, so each value is stored as it was bound
// (nothing is coerced) and its quote(CAST(v AS BLOB)) follows from the Go
// value alone. TestQuoteRowMatchesSQLite holds the two to the same bytes.
// If they ever differed, Verify would name the row as edited: the binding
// can only be stricter than the table, never hide an edit.

const hexDigits = "0123456789ABCDEF"

// appendQuoted appends v as SQLite's quote(CAST(v AS BLOB)) writes it: NULL,
// or X'...' with the bytes in upper-case hex (an integer's bytes are its
// decimal text).
func appendQuoted(b []byte, v any) ([]byte, error) {
	var s string
	switch x := v.(type) {
	case nil:
		return append(b, "NULL"...), nil
	case string:
		s = x
	case []byte:
		if x == nil {
			// database/sql binds a nil []byte as NULL.
			return append(b, "NULL"...), nil
		}
		s = string(x)
	case int64:
		var d [20]byte
		s = string(strconv.AppendInt(d[:0], x, 10))
	default:
		return nil, fmt.Errorf("ledger: quote a %T", v)
	}
	b = append(b, "X'"...)
	for i := 0; i < len(s); i++ {
		b = append(b, hexDigits[s[i]>>4], hexDigits[s[i]&15])
	}
	return append(b, '\''), nil
}

// quoteRow is the quoted content of a row of q's table whose columns hold
// the values in row (a column not in row is NULL). A key that is not a
// digested column is an error.
func (q *boundQuery) quoteRow(row map[string]any) (string, error) {
	b, err := q.appendQuoted(make([]byte, 0, 512), row)
	return string(b), err
}

// digestRow is rowDigest of quoteRow(row), built in one buffer.
func (q *boundQuery) digestRow(row map[string]any) (string, error) {
	b, err := q.appendQuoted(append(make([]byte, 0, 1024), q.prefix...), row)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// appendQuoted appends quoteRow(row) to b.
func (q *boundQuery) appendQuoted(b []byte, row map[string]any) ([]byte, error) {
	n := 0
	for i, c := range q.cols {
		if i > 0 {
			b = append(b, ',')
		}
		v, ok := row[c]
		if ok {
			n++
		}
		var err error
		if b, err = appendQuoted(b, v); err != nil {
			return nil, fmt.Errorf("ledger: %s.%s: %w", q.table.name, c, err)
		}
	}
	if n != len(row) {
		return nil, fmt.Errorf("ledger: a %s row with a column it does not have", q.table.name)
	}
	return b, nil
}

// maxStartedRows bounds startedRows: past it, an outcome reads its row back
// as the UPDATE writes it.
const maxStartedRows = 1024

// startedRows holds the columns of each call this ledger recorded as
// started, until its outcome: the outcome's UPDATE then binds the row
// without returning it. A row another writer moved since (a session marked
// interrupted) fails the UPDATE's state check. A row edited outside the
// ledger keeps the edit, and the outcome binds the values written here,
// so Verify names the row (TestQuoteRowMatchesStoredCalls).
type startedRows struct {
	mu   sync.Mutex
	rows map[int64]map[string]any
}

func (s *startedRows) put(id int64, row map[string]any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rows == nil {
		s.rows = map[int64]map[string]any{}
	}
	if _, ok := s.rows[id]; ok || len(s.rows) < maxStartedRows {
		s.rows[id] = row
	}
}

// take removes and returns the row of call id, if held.
func (s *startedRows) take(id int64) (map[string]any, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	row, ok := s.rows[id]
	delete(s.rows, id)
	return row, ok
}
