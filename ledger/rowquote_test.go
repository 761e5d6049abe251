package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The tests' quoting: the row as SQLite's quote(CAST(v AS BLOB)) writes
// it, built as a string the plain way. FuzzQuotedMatchesSQLite holds it to
// SQLite; the digests the ledger streams (quoteHasher) are held to it.

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

// digestRow is rowDigest of quoteRow(row), hashed as it is quoted.
func (q *boundQuery) digestRow(row map[string]any) (string, error) {
	return q.digestFrom(rowDigestStart{}, row)
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

// sqliteQuoted is what SQLite's quote(CAST(? AS BLOB)) makes of v.
func sqliteQuoted(t testing.TB, db *sql.DB, v any) string {
	t.Helper()
	var s string
	if err := db.QueryRow(`SELECT quote(CAST(? AS BLOB))`, v).Scan(&s); err != nil {
		t.Fatalf("quote %#v: %v", v, err)
	}
	return s
}

// FuzzQuotedMatchesSQLite holds appendQuoted to SQLite's own quote(CAST(v AS
// BLOB)) for every kind of value the ledger writes: strings (any bytes,
// invalid UTF-8 and NULs included), blobs, integers and NULL.
func FuzzQuotedMatchesSQLite(f *testing.F) {
	f.Add("", []byte{}, int64(0))
	f.Add("a\x00b\xff\xfe", []byte{0, 0xff, '\''}, int64(-9223372036854775808))
	f.Add("ünïcode 'q'", []byte("X'00'"), int64(9223372036854775807))
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		f.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	f.Fuzz(func(t *testing.T, s string, b []byte, n int64) {
		for _, v := range []any{s, b, n, nil} {
			got, err := appendQuoted(nil, v)
			if err != nil {
				t.Fatal(err)
			}
			if want := sqliteQuoted(t, db, v); string(got) != want {
				t.Fatalf("appendQuoted(%#v) = %s, SQLite %s", v, got, want)
			}
		}
	})
}

// FuzzDigestRowIsRowDigestOfQuoteRow holds the streamed digests to the
// quoted row they stand for: digestRow, and a digest begun with the
// arguments (startDigest) and finished with the rest (digestFrom, twice
// from one start, as a call's decision and outcome do), are rowDigest of
// quoteRow, for values shorter and longer than the hasher's buffer.
func FuzzDigestRowIsRowDigestOfQuoteRow(f *testing.F) {
	f.Add([]byte(`{"a":1}`), "s", int64(7), 0)
	f.Add([]byte(nil), "", int64(-1), 3000)
	f.Add([]byte{0, 0xff}, "\x00'", int64(0), 2047)
	q, err := boundQueries(&schemaInfo{columns: map[string]map[string]bool{
		"sessions": {"id": true}, "approvals": {"id": true}, "pins": {"id": true}, "scopes": {"session_id": true}, "labels": {"id": true}, "call_args": {"call_id": true, "args": true},
		"calls": {"id": true, "args": true, "args_digest": true, "server": true, "state": true, "duration_ms": true, "error": true},
	}})
	if err != nil {
		f.Fatal(err)
	}
	calls := q["calls"]
	f.Fuzz(func(t *testing.T, args []byte, s string, n int64, pad int) {
		pad = min(max(pad, 0), 1<<16)
		long := s + strings.Repeat("é", pad)
		var argsVal any
		if args != nil {
			argsVal = args
		}
		rows := []map[string]any{
			{"id": n, "args": argsVal, "server": long, "state": "started"},
			{"id": n, "args": argsVal, "server": long, "state": "done", "duration_ms": n, "error": s},
		}
		start, err := calls.startDigest(map[string]any{"args": argsVal}, "args")
		if err != nil {
			t.Fatal(err)
		}
		for _, row := range rows {
			quoted, err := calls.quoteRow(row)
			if err != nil {
				t.Fatal(err)
			}
			want := calls.rowDigest(quoted)
			if got, err := calls.digestRow(row); err != nil || got != want {
				t.Fatalf("digestRow = %s, %v; rowDigest(quoteRow) = %s", got, err, want)
			}
			if got, err := calls.digestFrom(start, row); err != nil || got != want {
				t.Fatalf("digestFrom(startDigest) = %s, %v; rowDigest(quoteRow) = %s", got, err, want)
			}
		}
	})
}

// TestDigestRefusesWhatQuoteRowRefuses: a column the table does not have,
// a value of a type SQLite is not given, and a digest begun past its
// columns are errors, not a digest of something else.
func TestDigestRefusesWhatQuoteRowRefuses(t *testing.T) {
	l := openTest(t, "", Options{})
	q := l.bound["calls"]
	start, err := q.startDigest(map[string]any{"args": []byte("{}")}, "args")
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range []map[string]any{
		{"id": int64(1), "nope": "x"},
		{"id": 1.5},
	} {
		if _, err := q.digestRow(row); err == nil {
			t.Errorf("digestRow(%v) = nil error", row)
		}
		if _, err := q.digestFrom(start, row); err == nil {
			t.Errorf("digestFrom(%v) = nil error", row)
		}
	}
	if _, err := q.startDigest(map[string]any{"args": nil, "server": "s"}, "args"); err == nil {
		t.Error("startDigest with a column past its end: nil error")
	}
	if _, err := q.startDigest(nil, "nope"); err == nil {
		t.Error("startDigest through a column calls does not have: nil error")
	}
}

// Proves the binding of the rows the ledger writes itself: the content a
// call's insert and its outcome bind, built in Go, is the content SQLite
// stored, for odd values too, so Verify passes; and an edit of a started
// call's row before its outcome is still named by Verify (the outcome
// binds what the ledger wrote, not what it finds).
func TestQuoteRowMatchesStoredCalls(t *testing.T) {
	ctx := context.Background()
	l := openTest(t, "", Options{})
	sess, err := l.StartSession(ctx, SessionInfo{})
	if err != nil {
		t.Fatal(err)
	}
	odd := []CallStart{
		{SessionID: sess.ID(), Server: "s", Tool: "t", Decision: "allow"},
		{SessionID: sess.ID(), RequestID: "\x00ü'", Server: "s\x7f", Tool: "ünï", Exposed: "e", PinDigest: "p",
			Args: []byte(`{"a":"\u0000'"}`), Decision: "allow", Rule: -3, Class: "read", Reason: "r\x00"},
		{SessionID: sess.ID(), Server: "s", Tool: "t", ArgsInvalid: []byte{0xff, 0}, Decision: "invalid", Reason: "bad"},
		{SessionID: sess.ID(), Server: "s", Tool: "t", Kind: KindPrompt, Decision: "allow"},
		// Arguments whose quoted form is several times the digest's buffer.
		{SessionID: sess.ID(), Server: "s", Tool: "t", Args: []byte(`{"big":"` + strings.Repeat("é'", 1500) + `"}`), Decision: "allow"},
	}
	var ids []int64
	for _, c := range odd {
		id, err := l.RecordCall(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	q := l.bound["calls"]
	for _, id := range ids {
		held, ok := l.started.rows[id]
		if !ok {
			continue
		}
		got, err := q.quoteRow(held.cols)
		if err != nil {
			t.Fatal(err)
		}
		var want string
		if err := l.rdb.QueryRowContext(ctx, q.one, id).Scan(&want); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("call %d: quoted in Go\n%s\nstored\n%s", id, got, want)
		}
	}
	if err := l.RecordOutcome(ctx, ids[0], Outcome{State: StateDone, ResultDigest: "d", ResultBytes: 7, Duration: time.Second}); err != nil {
		t.Fatal(err)
	}
	if err := l.RecordOutcome(ctx, ids[1], Outcome{State: StateFailed, IsError: true, Err: "e\x00ÿ"}); err != nil {
		t.Fatal(err)
	}
	if err := l.RecordOutcome(ctx, ids[4], Outcome{State: StateDone, Err: strings.Repeat("x", 5000)}); err != nil {
		t.Fatal(err)
	}
	if rep, err := l.Verify(ctx); err != nil || !rep.OK {
		t.Fatalf("Verify after calls with odd values: %+v, %v", rep, err)
	}

	// A second outcome of the same call is a conflict, and so is the
	// outcome of a held call another process marked interrupted.
	if err := l.RecordOutcome(ctx, ids[0], Outcome{State: StateDone}); !errors.Is(err, ErrConflict) {
		t.Fatalf("second outcome: %v, want ErrConflict", err)
	}
	late, err := l.RecordCall(ctx, odd[0])
	if err != nil {
		t.Fatal(err)
	}
	if _, held := l.started.rows[late]; !held {
		t.Fatalf("call %d: its row is not held", late)
	}
	mustExec(t, plainDB(t, l.path), `UPDATE calls SET state = 'interrupted' WHERE id = ?`, late)
	if err := l.RecordOutcome(ctx, late, Outcome{State: StateDone}); !errors.Is(err, ErrConflict) {
		t.Fatalf("outcome of a call marked interrupted: %v, want ErrConflict", err)
	}
	mustExec(t, plainDB(t, l.path), `UPDATE calls SET state = 'started' WHERE id = ?`, late)
	if err := l.RecordOutcome(ctx, late, Outcome{State: StateDone}); err != nil {
		t.Fatal(err)
	}

	// An edit of a started row, then its outcome: Verify names the row.
	mustExec(t, plainDB(t, l.path), `UPDATE calls SET tool = 'other' WHERE id = ?`, ids[3])
	if err := l.RecordOutcome(ctx, ids[3], Outcome{State: StateDone}); err != nil {
		t.Fatal(err)
	}
	rep, err := l.Verify(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.OK || rep.Table != "calls" || rep.Key != keyOf(ids[3]) {
		t.Fatalf("Verify after an edit before the outcome: %+v, want calls row %d named", rep, ids[3])
	}
}

func keyOf(id int64) string { k, _ := keyString(id); return k }
