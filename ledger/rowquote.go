package ledger

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"slices"
	"strconv"
	"sync"
)

// A call's rows on the hot path (its decision, its arguments, and its
// outcome while startedRows still holds its columns) are digested from the
// values the ledger wrote, not read back: digestFrom hashes, in Go, the
// string boundQuery.returning would return, quoting it as it goes. Every
// other bound row (a state change by CAS, an outcome past maxStartedRows,
// pins, approvals, sessions) comes back with the statement that wrote it
// (boundQuery.returning) or is read back when its event is appended
// (Tx.touch). The tables are STRICT, so each value
// is stored as it was bound (nothing is coerced) and its
// quote(CAST(v AS BLOB)) follows from the Go value alone.
// FuzzQuotedMatchesSQLite, FuzzDigestRowIsRowDigestOfQuoteRow and
// TestQuoteRowMatchesStoredCalls hold the two to the same bytes.
// If they ever differed, Verify would name the row as edited: the binding
// can only be stricter than the table, never hide an edit.

const hexDigits = "0123456789ABCDEF"

// quoteHasher writes quoted values into a hash through a fixed buffer: a
// row is digested without its quoted form ever being built, so a call
// whose arguments are megabytes costs no buffer twice their size (hex),
// nor its copies as the buffer grows.
type quoteHasher struct {
	h   hash.Hash
	n   int
	buf [512]byte
}

func (w *quoteHasher) flush() {
	w.h.Write(w.buf[:w.n])
	w.n = 0
}

func (w *quoteHasher) text(s string) {
	if w.n+len(s) > len(w.buf) {
		w.flush()
	}
	w.n += copy(w.buf[w.n:], s)
}

// value writes v as SQLite's quote(CAST(v AS BLOB)) writes it: NULL, or
// X'...' with the bytes in upper-case hex (an integer's bytes are its
// decimal text).
func (w *quoteHasher) value(v any) error {
	switch x := v.(type) {
	case nil:
		w.text("NULL")
	case string:
		quoteHex(w, x)
	case []byte:
		if x == nil {
			w.text("NULL") // database/sql binds a nil []byte as NULL
			return nil
		}
		quoteHex(w, x)
	case int64:
		var d [20]byte
		quoteHex(w, strconv.AppendInt(d[:0], x, 10))
	default:
		return fmt.Errorf("ledger: quote a %T", v)
	}
	return nil
}

// quoteHex writes X'...' with s's bytes in upper-case hex.
func quoteHex[T string | []byte](w *quoteHasher, s T) {
	w.text("X'")
	for i := 0; i < len(s); i++ {
		if w.n+2 > len(w.buf) {
			w.flush()
		}
		w.buf[w.n], w.buf[w.n+1] = hexDigits[s[i]>>4], hexDigits[s[i]&15]
		w.n += 2
	}
	w.text("'")
}

// rowDigestStart is a row's digest begun: the table's prefix and the row's
// first columns, through one column, hashed. A call's arguments (the first
// column of calls) are hashed once, before its decision's batch, for both
// the digests that bind its row: the decision's and the outcome's. The
// zero value has nothing begun.
type rowDigestStart struct {
	h    hash.Cloner // nil: nothing begun
	cols int         // how many of q.cols are hashed
}

// startDigest hashes q's prefix and the columns of q.cols up to and
// including through ("": none), with the values first holds (a column not
// in first is NULL; first may hold no other column).
func (q *boundQuery) startDigest(first map[string]any, through string) (rowDigestStart, error) {
	w := &quoteHasher{h: sha256.New()}
	w.text(q.prefix)
	n := 0
	if through != "" {
		n = slices.Index(q.cols, through) + 1
		if n == 0 {
			return rowDigestStart{}, fmt.Errorf("ledger: %s has no digested column %s", q.table.name, through)
		}
	}
	seen := 0
	for i, c := range q.cols[:n] {
		if i > 0 {
			w.text(",")
		}
		v, ok := first[c]
		if ok {
			seen++
		}
		if err := w.value(v); err != nil {
			return rowDigestStart{}, fmt.Errorf("ledger: %s.%s: %w", q.table.name, c, err)
		}
	}
	if seen != len(first) {
		return rowDigestStart{}, fmt.Errorf("ledger: a %s row begun with a column past %s", q.table.name, through)
	}
	w.flush()
	h, ok := w.h.(hash.Cloner)
	if !ok {
		// A SHA-256 that cannot be cloned (a FIPS 140 v1.0.0 build):
		// each digest hashes the whole row.
		return rowDigestStart{}, nil
	}
	return rowDigestStart{h: h, cols: n}, nil
}

// digestFrom is the digest of row, whose columns before d's end are those
// d hashed (row must hold them as d had them; they are not hashed again).
// d can be used again.
func (q *boundQuery) digestFrom(d rowDigestStart, row map[string]any) (string, error) {
	var w *quoteHasher
	if d.h == nil {
		w = &quoteHasher{h: sha256.New()}
		w.text(q.prefix)
	} else {
		h, err := d.h.Clone()
		if err != nil {
			return "", fmt.Errorf("ledger: %s row digest: %w", q.table.name, err)
		}
		w = &quoteHasher{h: h}
	}
	n := 0
	for i, c := range q.cols {
		v, ok := row[c]
		if ok {
			n++
		}
		if i < d.cols {
			continue
		}
		if i > 0 {
			w.text(",")
		}
		if err := w.value(v); err != nil {
			return "", fmt.Errorf("ledger: %s.%s: %w", q.table.name, c, err)
		}
	}
	if n != len(row) {
		return "", fmt.Errorf("ledger: a %s row with a column it does not have", q.table.name)
	}
	w.flush()
	return hex.EncodeToString(w.h.Sum(nil)), nil
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
	rows map[int64]startedRow
}

// startedRow is a started call's columns, and its digest begun with its
// arguments.
type startedRow struct {
	cols   map[string]any
	digest rowDigestStart
}

func (s *startedRows) put(id int64, row startedRow) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rows == nil {
		s.rows = map[int64]startedRow{}
	}
	if _, ok := s.rows[id]; ok || len(s.rows) < maxStartedRows {
		s.rows[id] = row
	}
}

// take removes and returns the row of call id, if held.
func (s *startedRows) take(id int64) (startedRow, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	row, ok := s.rows[id]
	delete(s.rows, id)
	return row, ok
}
