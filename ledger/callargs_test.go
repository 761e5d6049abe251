package ledger

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// argsOfLen is {"content": "xx…"} of exactly n bytes (n ≥ 15).
func argsOfLen(n int) []byte {
	return []byte(`{"content": "` + strings.Repeat("x", n-15) + `"}`)
}

// longArgsLedger records, in one session of scope "h": a call whose
// arguments are argsApart bytes, one whose arguments are one byte longer
// (which brings label "secret"), and an ask with long arguments that the
// operator approves and that runs; each call gets its outcome.
func longArgsLedger(t *testing.T) (l *Ledger, path string, short, long, ask int64) {
	t.Helper()
	ctx := context.Background()
	path = filepath.Join(t.TempDir(), "ledger.db")
	l = openTest(t, path, Options{LeaseTTL: time.Hour})
	s := startSession(t, l)
	if _, err := l.JoinScope(ctx, s.ID(), "h", time.Minute); err != nil {
		t.Fatal(err)
	}
	var err error
	for _, c := range []struct {
		id   *int64
		args []byte
	}{{&short, argsOfLen(argsApart)}, {&long, argsOfLen(argsApart + 1)}} {
		*c.id, err = l.RecordCall(ctx, CallStart{SessionID: s.ID(), Server: "fs", Tool: "write_file", Args: c.args,
			Decision: "allow", Rule: 1, Class: "write"})
		if err != nil {
			t.Fatal(err)
		}
		if err := l.RecordOutcome(ctx, *c.id, Outcome{State: StateDone, ResultDigest: "r", ResultBytes: 2}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.GainLabels(ctx, "h", s.ID(), long, []string{"secret"}); err != nil {
		t.Fatal(err)
	}
	args := argsOfLen(3 * argsApart)
	ask, approval, err := l.RecordAsk(ctx, CallStart{SessionID: s.ID(), Server: "fs", Tool: "write_file", PinDigest: "p",
		Args: args, Decision: "ask", Rule: 2, Class: "write"},
		ApprovalStart{Presentation: "write", PresentationDigest: "pd", Binding: "b", ExpiresAt: l.Now().Add(time.Hour), GrantTTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.DecideApproval(ctx, approval, "pd", true, "fine", shownAs("pd")); err != nil {
		t.Fatal(err)
	}
	if err := l.UseApproval(ctx, approval, func(Approval) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if err := l.RecordOutcome(ctx, ask, Outcome{State: StateDone}); err != nil {
		t.Fatal(err)
	}
	return l, path, short, long, ask
}

// Proves L1 and L8 for long arguments (migration8): arguments longer than
// argsApart bytes are written once, to call_args, with the calls row's args
// NULL, so recording the outcome (an UPDATE, which rewrites a whole row)
// does not write them again, and the call's event binds them by that row's
// digest instead of holding a copy; arguments of argsApart bytes stay in
// the row and the event. Every reader (Call, Calls, ScopeLabels) returns
// the exact bytes, and the ledger verifies.
func TestRecordCall_LongArgsStoredApart(t *testing.T) {
	ctx := context.Background()
	l, path, short, long, ask := longArgsLedger(t)
	db := plainDB(t, path)
	want := map[int64][]byte{short: argsOfLen(argsApart), long: argsOfLen(argsApart + 1), ask: argsOfLen(3 * argsApart)}
	for id, inRow := range map[int64]bool{short: true, long: false, ask: false} {
		var rowArgs, apart []byte
		if err := db.QueryRow(`SELECT args FROM calls WHERE id = ?`, id).Scan(&rowArgs); err != nil {
			t.Fatal(err)
		}
		n := countRows(t, db, `SELECT count(*) FROM call_args WHERE call_id = ?`, id)
		if n == 1 {
			if err := db.QueryRow(`SELECT args FROM call_args WHERE call_id = ?`, id).Scan(&apart); err != nil {
				t.Fatal(err)
			}
		}
		if inRow && (!bytes.Equal(rowArgs, want[id]) || n != 0) || !inRow && (rowArgs != nil || !bytes.Equal(apart, want[id])) {
			t.Fatalf("call %d (%d bytes of arguments): row holds %d bytes, call_args %d rows of %d bytes", id, len(want[id]), len(rowArgs), n, len(apart))
		}
		row, err := l.Call(ctx, id)
		if err != nil || !bytes.Equal(row.Args, want[id]) || row.DecodeError != "" || row.State != StateDone {
			t.Fatalf("Call(%d): %d bytes of arguments, state %s, %q, %v", id, len(row.Args), row.State, row.DecodeError, err)
		}
		// The event that recorded the call holds short arguments; long
		// ones it binds by the call_args row's digest, with their own.
		_, body := firstEvent(t, l, callSubject(id))
		rows, _ := body["rows"].(map[string]any)
		_, bound := rows["call_args:"+itoa(id)]
		args, held := body["args"]
		argsObj, _ := args.(map[string]any)
		content, _ := argsObj["content"].(string)
		if body["args_digest"] != digestOf(t, want[id]) || bound == inRow || held != inRow || inRow && len(content) != len(want[id])-15 {
			t.Fatalf("call %d: its event holds args %v (%d bytes of content), digest %v, binds %v", id, held, len(content), body["args_digest"], rows)
		}
	}
	// A call whose transaction fails after its arguments were stored
	// leaves neither them nor its row behind.
	var session string
	if err := db.QueryRow(`SELECT session_id FROM calls WHERE id = ?`, long).Scan(&session); err != nil {
		t.Fatal(err)
	}
	c := CallStart{SessionID: session, Server: "fs", Tool: "write_file", Args: argsOfLen(2 * argsApart), Decision: "allow"}
	prep, err := l.prepareCall(c)
	if err != nil {
		t.Fatal(err)
	}
	var failed int64
	err = l.Write(ctx, func(tx *Tx) error {
		if err := insertCallOp(c, prep, StateStarted, "call.started", &failed)(tx); err != nil {
			return err
		}
		return errors.New("fails after the call was stored")
	})
	if err == nil || failed == 0 {
		t.Fatalf("the failing write: %v, call %d", err, failed)
	}
	if n, m := countRows(t, db, `SELECT count(*) FROM call_args`), countRows(t, db, `SELECT count(*) FROM calls`); n != 2 || m != 3 {
		t.Fatalf("after a failed write: %d rows of arguments (want 2), %d calls (want 3)", n, m)
	}
	rows, err := l.Calls(ctx, CallFilter{Server: "fs"})
	if err != nil || len(rows) != 3 {
		t.Fatalf("Calls: %d rows, %v", len(rows), err)
	}
	for _, r := range rows {
		if !bytes.Equal(r.Args, want[r.ID]) {
			t.Fatalf("Calls: call %d has %d bytes of arguments", r.ID, len(r.Args))
		}
	}
	labels, err := l.ScopeLabels(ctx, "h")
	if err != nil || len(labels) != 1 || labels[0].CallID != long || !bytes.Equal(labels[0].Args, want[long]) {
		t.Fatalf("ScopeLabels: %+v, %v", labels, err)
	}
	if rep, err := l.Verify(ctx); err != nil || !rep.OK {
		t.Fatalf("Verify: %+v, %v", rep, err)
	}
}

// firstEvent is subject's first event: the one that recorded the call.
func firstEvent(t *testing.T, l *Ledger, subject string) (kind string, body map[string]any) {
	t.Helper()
	var seq int64
	if err := l.rdb.QueryRow(`SELECT min(seq) FROM events WHERE subject = ?`, subject).Scan(&seq); err != nil {
		t.Fatal(err)
	}
	var raw []byte
	if err := l.rdb.QueryRow(`SELECT kind, body FROM events WHERE seq = ?`, seq).Scan(&kind, &raw); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatal(err)
	}
	return kind, body
}

// Proves L8 for call_args: the rows are bound into the chain, so an edited,
// deleted or inserted row of arguments is named by Verify, as a calls row
// is; an edited calls row whose arguments are apart is named with the
// column edited.
func TestVerify_NamesTamperedCallArgs(t *testing.T) {
	forged := `{"path":"/etc/passwd"}`
	for _, tc := range []struct {
		name, problem string
		sql           func(short, long int64) string
		key           func(short, long int64) int64
	}{
		{"edit", "edited", func(_, long int64) string {
			return "UPDATE call_args SET args = CAST('" + forged + "' AS BLOB) WHERE call_id = " + itoa(long)
		}, func(_, long int64) int64 { return long }},
		{"delete", "deleted", func(_, long int64) string {
			return "DELETE FROM call_args WHERE call_id = " + itoa(long)
		}, func(_, long int64) int64 { return long }},
		{"edit the calls row", "edited", func(_, long int64) string {
			return "UPDATE calls SET tool = 'delete_file' WHERE id = " + itoa(long)
		}, func(_, long int64) int64 { return long }},
		{"insert", "inserted", func(short, _ int64) string {
			return "INSERT INTO call_args (call_id, args) VALUES (" + itoa(short) + ", CAST('" + forged + "' AS BLOB))"
		}, func(short, _ int64) int64 { return short }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, path, short, long, _ := longArgsLedger(t)
			mustExec(t, plainDB(t, path), tc.sql(short, long))
			rep, err := l.Verify(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			table, column := "call_args", ""
			if tc.name == "edit the calls row" {
				// The recording event holds no arguments to compare: the
				// column named is the one edited, not args.
				table, column = "calls", "tool"
			}
			if rep.OK || rep.Table != table || rep.Key != itoa(tc.key(short, long)) || rep.Column != column || !strings.Contains(rep.Problem, tc.problem) {
				t.Fatalf("report %+v, want %s %d %s (column %q)", rep, table, tc.key(short, long), tc.problem, column)
			}
		})
	}
}
