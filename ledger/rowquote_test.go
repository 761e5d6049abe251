package ledger

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"
)

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
		row, ok := l.started.rows[id]
		if !ok {
			continue
		}
		got, err := q.quoteRow(row)
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
