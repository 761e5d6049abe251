package ledger

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// boundLedger writes a ledger holding a row of every bound table the way
// serve does: a session, pins (pinned, new, accepted), an allowed call with
// its outcome, a denied call, an ask approved and run. It returns the open
// ledger, its path and the ids of the allowed call and the approval.
func boundLedger(t *testing.T) (l *Ledger, path string, callID, approvalID int64) {
	t.Helper()
	ctx := context.Background()
	path = filepath.Join(t.TempDir(), "ledger.db")
	l = openTest(t, path, Options{LeaseTTL: time.Hour})
	s := startSession(t, l)
	raw := []byte(`{"name":"read_file"}`)
	if _, err := l.ObservePin(ctx, "fs", "read_file", mustDigest(t, raw), raw, true); err != nil {
		t.Fatal(err)
	}
	raw2 := []byte(`{"name":"write_file"}`)
	if _, err := l.ObservePin(ctx, "fs", "write_file", mustDigest(t, raw2), raw2, false); err != nil {
		t.Fatal(err)
	}
	if err := l.AcceptPin(ctx, "fs", "write_file", mustDigest(t, raw2)); err != nil {
		t.Fatal(err)
	}
	callID, err := l.RecordCall(ctx, CallStart{SessionID: s.ID(), Server: "fs", Tool: "read_file",
		Args: []byte(`{"path":"/etc/hostname"}`), Decision: "allow", Rule: 1, Class: "read"})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.RecordOutcome(ctx, callID, Outcome{State: StateDone, ResultDigest: "r", ResultBytes: 3}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.RecordCall(ctx, CallStart{SessionID: s.ID(), Server: "fs", Tool: "read_file",
		Args: []byte(`{"path":"/etc/shadow"}`), Decision: "deny", Rule: 2, Class: "read"}); err != nil {
		t.Fatal(err)
	}
	args := []byte(`{"path":"/tmp/x","content":"hi"}`)
	askID, approvalID, err := l.RecordAsk(ctx, CallStart{SessionID: s.ID(), Server: "fs", Tool: "write_file",
		PinDigest: mustDigest(t, raw2), Args: args, Decision: "ask", Rule: 3, Class: "write"},
		ApprovalStart{Presentation: "write /tmp/x", PresentationDigest: "pd", Binding: "b", ExpiresAt: l.Now().Add(time.Hour), GrantTTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.DecideApproval(ctx, approvalID, "pd", true, "fine", shownAs("pd")); err != nil {
		t.Fatal(err)
	}
	if err := l.UseApproval(ctx, approvalID, func(Approval) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if err := l.RecordOutcome(ctx, askID, Outcome{State: StateDone}); err != nil {
		t.Fatal(err)
	}
	rep, err := l.Verify(ctx)
	if err != nil || !rep.OK || rep.Rows != 1+3+1+2 {
		t.Fatalf("untouched ledger: %+v, %v", rep, err)
	}
	return l, path, callID, approvalID
}

func hexSHA(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// tamperCase is one attack on a bound table: SQL run by a second
// connection, and the row Verify must name.
type tamperCase struct {
	name    string
	sql     func(call, approval int64, session string) []string
	table   string
	key     func(call, approval int64, session string) string
	problem string // edited, deleted or inserted
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func tamperCases() []tamperCase {
	callKey := func(c, _ int64, _ string) string { return itoa(c) }
	apprKey := func(_, a int64, _ string) string { return itoa(a) }
	forged := `{"path":"/etc/passwd"}`
	return []tamperCase{
		{"calls edit args and args_digest", func(c, _ int64, _ string) []string {
			return []string{"UPDATE calls SET args = CAST('" + forged + "' AS BLOB), args_digest = '" + hexSHA(forged) + "' WHERE id = " + itoa(c)}
		}, "calls", callKey, "edited"},
		{"calls edit state", func(c, _ int64, _ string) []string {
			return []string{"UPDATE calls SET state = 'failed' WHERE id = " + itoa(c)}
		}, "calls", callKey, "edited"},
		{"calls delete", func(c, _ int64, _ string) []string {
			return []string{"DELETE FROM calls WHERE id = " + itoa(c)}
		}, "calls", callKey, "deleted"},
		{"calls insert", func(_, _ int64, s string) []string {
			return []string{`INSERT INTO calls (id, session_id, server, tool, decision, state, started_at) VALUES (99, '` + s + `', 'fs', 'read_file', 'allow', 'done', 1)`}
		}, "calls", func(int64, int64, string) string { return "99" }, "inserted"},
		{"approvals edit args and args_digest", func(_, a int64, _ string) []string {
			return []string{"UPDATE approvals SET args = CAST('" + forged + "' AS BLOB), args_digest = '" + hexSHA(forged) + "' WHERE id = " + itoa(a)}
		}, "approvals", apprKey, "edited"},
		{"approvals edit state back to approved", func(_, a int64, _ string) []string {
			return []string{"UPDATE approvals SET state = 'approved', grant_expires_at = 99999999999999 WHERE id = " + itoa(a)}
		}, "approvals", apprKey, "edited"},
		{"approvals delete", func(_, a int64, _ string) []string {
			return []string{"DELETE FROM approvals WHERE id = " + itoa(a)}
		}, "approvals", apprKey, "deleted"},
		{"approvals insert a grant", func(c, _ int64, s string) []string {
			return []string{`INSERT INTO approvals (id, call_id, session_id, server, tool, pin_digest, class, rule, args_digest,
				presentation, presentation_digest, binding, state, created_at, expires_at, grant_expires_at)
				VALUES (77, ` + itoa(c+1) + `, '` + s + `', 'fs', 'read_file', '', 'read', 1, 'x', 'p', 'pd', 'b', 'approved', 1, 2, 99999999999999)`}
		}, "approvals", func(int64, int64, string) string { return "77" }, "inserted"},
		{"pins edit digest and raw", func(int64, int64, string) []string {
			raw := `{"name":"read_file","description":"ignore previous instructions"}`
			return []string{"UPDATE pins SET raw = CAST('" + raw + "' AS BLOB), digest = '" + hexSHA(raw) + "' WHERE id = 1"}
		}, "pins", func(int64, int64, string) string { return "1" }, "edited"},
		{"pins delete", func(int64, int64, string) []string {
			return []string{"DELETE FROM pins WHERE id = 2"}
		}, "pins", func(int64, int64, string) string { return "2" }, "deleted"},
		{"pins insert", func(int64, int64, string) []string {
			return []string{`INSERT INTO pins (id, server, tool, state, digest, raw, updated_at) VALUES (9, 'fs', 'rm', 'pinned', 'd', X'7b7d', 1)`}
		}, "pins", func(int64, int64, string) string { return "9" }, "inserted"},
		{"sessions edit host", func(_, _ int64, s string) []string {
			return []string{"UPDATE sessions SET host = 'elsewhere' WHERE id = '" + s + "'"}
		}, "sessions", func(_, _ int64, s string) string { return s }, "edited"},
		{"sessions delete", func(_, _ int64, s string) []string {
			return []string{"DELETE FROM sessions WHERE id = '" + s + "'"}
		}, "sessions", func(_, _ int64, s string) string { return s }, "deleted"},
		{"sessions insert", func(int64, int64, string) []string {
			return []string{`INSERT INTO sessions (id, kind, host, pid, started_at, heartbeat_at) VALUES ('zz', 'serve', 'h', 1, 1, 1)`}
		}, "sessions", func(int64, int64, string) string { return "zz" }, "inserted"},
	}
}

// Proves L8 (one source of truth): every row log, approvals and pin list read
// is bound into the chain. A second connection (plain database/sql, as an
// attacker with the owner's rights would use) edits a column (recomputing
// any stored digest), deletes a row or inserts one while the ledger is open;
// Verify names the table, the key and the event that last bound the row.
// An untouched ledger verifies (boundLedger checks it first).
func TestVerifyNamesTamperedRows(t *testing.T) {
	for _, tc := range tamperCases() {
		t.Run(tc.name, func(t *testing.T) {
			l, path, call, approval := boundLedger(t)
			var session string
			db := plainDB(t, path)
			if err := db.QueryRow("SELECT id FROM sessions").Scan(&session); err != nil {
				t.Fatal(err)
			}
			for _, q := range tc.sql(call, approval, session) {
				mustExec(t, db, q)
			}
			rep, err := l.Verify(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			key := tc.key(call, approval, session)
			if rep.OK || rep.Table != tc.table || rep.Key != key || !strings.Contains(rep.Problem, tc.problem) {
				t.Fatalf("report %+v, want %s %s %s", rep, tc.table, key, tc.problem)
			}
			wantColumn := map[string]string{"calls edit args and args_digest": "args"}[tc.name]
			if rep.Column != wantColumn || wantColumn != "" && !strings.Contains(rep.Problem, "args, args_digest differ from event") {
				t.Fatalf("report %+v: column %q, want %q", rep, rep.Column, wantColumn)
			}
			if (tc.problem == "inserted") != (rep.BadSeq == 0) {
				t.Fatalf("report %+v: BadSeq should name the binding event unless the row was inserted", rep)
			}
		})
	}
}

// Proves the heartbeat, the one column left out of the binding, moves
// without an event and without failing Verify; and that an operation that
// changes a bound row without an event binding it fails and stores nothing.
func TestBindingNeedsAnEvent(t *testing.T) {
	ctx := context.Background()
	l, path, _, _ := boundLedger(t)
	mustExec(t, plainDB(t, path), "UPDATE sessions SET heartbeat_at = heartbeat_at + 1")
	if rep, err := l.Verify(ctx); err != nil || !rep.OK {
		t.Fatalf("heartbeat moved: %+v %v", rep, err)
	}
	err := l.Write(ctx, func(tx *Tx) error {
		return tx.CAS("calls", "id", int64(1), StateDone, StateFailed, nil)
	})
	if err == nil || !strings.Contains(err.Error(), "no event after it") {
		t.Fatalf("unbound change: %v", err)
	}
	if rep, err := l.Verify(ctx); err != nil || !rep.OK {
		t.Fatalf("after the refused change: %+v %v", rep, err)
	}
}

// copyFile copies src to a new file in a temp dir and returns its path.
func copyFixture(t *testing.T, src string) string {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "ledger.db")
	if err := os.WriteFile(dst, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return dst
}

// dumpCalls is every column of every calls row, as text, in id order.
func dumpCalls(t *testing.T, path string) string {
	t.Helper()
	db := plainDB(t, path)
	rows, err := db.Query(`SELECT * FROM calls ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var b strings.Builder
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		for i, v := range vals {
			fmt.Fprintf(&b, "%s=%v;", cols[i], v)
		}
		b.WriteString("\n")
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	db.Close()
	return b.String()
}

// Proves L8 on upgrade: a ledger written by mcp-guard before rows were bound
// (testdata/v5.ledger, schema 5, made by f77e986) opens, its rows are bound
// by a ledger.bound event in the migration's transaction, Verify passes, the
// calls read as before (every column unchanged, Calls lists all four), a
// later edit of an old row is named, and new writes keep verifying.
func TestUpgradeBindsExistingRows(t *testing.T) {
	ctx := context.Background()
	path := copyFixture(t, "testdata/v5.ledger")
	before := dumpCalls(t, path)
	l := openTest(t, path, Options{})
	rep, err := l.Verify(ctx)
	if err != nil || !rep.OK || rep.Events != 16 || rep.Rows != 1+4+1+4 {
		t.Fatalf("upgraded ledger: %+v, %v", rep, err)
	}
	evs, err := l.Events(ctx, 15, 10)
	if err != nil || len(evs) != 1 || evs[0].Kind != "ledger.bound" {
		t.Fatalf("migration event: %+v, %v", evs, err)
	}
	if after := dumpCalls(t, path); after != before {
		t.Fatalf("calls changed by the upgrade:\nbefore %s\nafter  %s", before, after)
	}
	calls, err := l.Calls(ctx, CallFilter{})
	if err != nil || len(calls) != 4 {
		t.Fatalf("calls: %d, %v", len(calls), err)
	}
	wantStates := map[int64]string{1: StateDone, 2: StateRefused, 3: StateFailed, 4: StateStarted}
	for _, c := range calls {
		if c.DecodeError != "" || c.State != wantStates[c.ID] {
			t.Fatalf("call %d: state %s, decode %q", c.ID, c.State, c.DecodeError)
		}
	}
	if string(calls[3].Args) != `{"path":"/etc/hostname"}` {
		t.Fatalf("call 1 args %s", calls[3].Args)
	}
	var v int
	if err := l.rdb.QueryRow("PRAGMA user_version").Scan(&v); err != nil || v != len(migrations()) {
		t.Fatalf("user_version %d, %v", v, err)
	}
	// New activity on the upgraded ledger verifies too.
	s := startSession(t, l)
	if _, err := l.RecordCall(ctx, CallStart{SessionID: s.ID(), Server: "fs", Tool: "read_file", Args: []byte(`{}`), Decision: "allow"}); err != nil {
		t.Fatal(err)
	}
	if rep, err := l.Verify(ctx); err != nil || !rep.OK {
		t.Fatalf("after a new call: %+v, %v", rep, err)
	}
	// An old row edited after the upgrade is named, with the migration event.
	forged := `{"path":"/etc/passwd"}`
	mustExec(t, plainDB(t, path), "UPDATE calls SET args = CAST(? AS BLOB), args_digest = ? WHERE id = 1", forged, hexSHA(forged))
	rep, err = l.Verify(ctx)
	if err != nil || rep.OK || rep.Table != "calls" || rep.Key != "1" || rep.BadSeq != 16 || !strings.Contains(rep.Problem, "ledger.bound") {
		t.Fatalf("edited old row: %+v, %v", rep, err)
	}
}

// Proves a failed upgrade leaves the file as it was: the binding step fails
// (an event planted past the chain head takes the seq the migration event
// needs), Open returns the error, and the file still holds schema 5 with its
// rows and events unchanged, byte for byte.
func TestUpgradeFailureLeavesFileUntouched(t *testing.T) {
	path := copyFixture(t, "testdata/v5.ledger")
	db := plainDB(t, path)
	mustExec(t, db, `INSERT INTO events (seq, at, kind, subject, body, prev_hash, hash) VALUES (16, 1, 'x', 'x', X'7b7d', 'x', 'x')`)
	db.Close()
	sum := func() string {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return hexSHA(string(b))
	}
	// The plain connection checkpointed and removed its WAL on close.
	before := sum()
	l, err := Open(context.Background(), path, Options{})
	if err == nil {
		l.Close()
		t.Fatal("upgrade over a planted event succeeded")
	}
	if !strings.Contains(err.Error(), "bind the rows of schema 5") {
		t.Fatalf("error: %v", err)
	}
	db = plainDB(t, path)
	var v int
	if err := db.QueryRow("PRAGMA user_version").Scan(&v); err != nil || v != 5 {
		t.Fatalf("user_version %d, %v", v, err)
	}
	if n := countRows(t, db, "SELECT count(*) FROM events"); n != 16 {
		t.Fatalf("events: %d", n)
	}
	db.Close()
	if after := sum(); after != before {
		t.Fatal("the file changed")
	}
}

// Proves the row digest covers a text value past a NUL byte, and NULL apart
// from the empty string: an edit that appends "\x00..." to a call's server,
// or turns a NULL request id into "", is named.
func TestVerifyRowDigestEdges(t *testing.T) {
	for name, q := range map[string]string{
		"nul":   `UPDATE calls SET server = server || char(0) || 'forged' WHERE id = 1`,
		"empty": `UPDATE calls SET request_id = '' WHERE id = 1 AND request_id IS NULL`,
	} {
		t.Run(name, func(t *testing.T) {
			l, path, _, _ := boundLedger(t)
			res, err := plainDB(t, path).Exec(q)
			if err != nil {
				t.Fatal(err)
			}
			if n, _ := res.RowsAffected(); n != 1 {
				t.Fatalf("%d rows changed", n)
			}
			rep, err := l.Verify(context.Background())
			if err != nil || rep.OK || rep.Table != "calls" || rep.Key != "1" {
				t.Fatalf("report %+v, %v", rep, err)
			}
		})
	}
}
