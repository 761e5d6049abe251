package ledger

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcp-guard/mcp-guard/internal/canon"
)

func lastEvent(t *testing.T, l *Ledger, subject string) (kind string, body map[string]any) {
	t.Helper()
	var raw []byte
	if err := l.rdb.QueryRow(`SELECT kind, body FROM events WHERE subject = ? ORDER BY seq DESC LIMIT 1`, subject).Scan(&kind, &raw); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatal(err)
	}
	return kind, body
}

// Proves G3/G4/L1 for calls: invalid JSON is refused as Args but kept
// verbatim in ArgsInvalid; the decision decides the state; the row and its
// event commit together; args are stored verbatim with a canonical digest.
func TestRecordCall(t *testing.T) {
	ctx := context.Background()
	l := openTest(t, "", Options{})
	s := startSession(t, l)

	_, err := l.RecordCall(ctx, CallStart{SessionID: s.ID(), Server: "fs", Tool: "w", Args: []byte(`{"a":1,"a":2}`), Decision: "allow"})
	if err == nil || !strings.Contains(err.Error(), "ArgsInvalid") {
		t.Fatalf("duplicate-key args: %v", err)
	}
	// Strict JSON too deep for an event to hold is refused the same way; at
	// MaxArgsDepth it is recorded.
	nest := func(n int) []byte {
		return []byte(`{"a":` + strings.Repeat("[", n-1) + strings.Repeat("]", n-1) + `}`)
	}
	_, err = l.RecordCall(ctx, CallStart{SessionID: s.ID(), Server: "fs", Tool: "w", Args: nest(MaxArgsDepth + 1), Decision: "allow"})
	if err == nil || !strings.Contains(err.Error(), "ArgsInvalid") {
		t.Fatalf("too deep args: %v", err)
	}
	if n := countRows(t, l.rdb, `SELECT count(*) FROM calls`); n != 0 {
		t.Fatalf("refused args stored: %d rows", n)
	}
	if _, err := l.RecordCall(ctx, CallStart{SessionID: s.ID(), Server: "fs", Tool: "w", Args: nest(MaxArgsDepth), Decision: "deny"}); err != nil {
		t.Fatalf("args at MaxArgsDepth: %v", err)
	}

	bad := []byte("{\"a\":\xff")
	invalidID, err := l.RecordCall(ctx, CallStart{SessionID: s.ID(), Server: "fs", Tool: "w", ArgsInvalid: bad, Decision: "invalid", Reason: "not JSON"})
	if err != nil {
		t.Fatal(err)
	}
	row, err := l.Call(ctx, invalidID)
	if err != nil || row.State != StateRefused || string(row.ArgsInvalid) != string(bad) || row.Args != nil || row.ArgsDigest != "" || row.DecodeError != "" {
		t.Fatalf("invalid-args call: %+v %v", row, err)
	}
	kind, body := lastEvent(t, l, callSubject(invalidID))
	if kind != "call.refused" || body["args_invalid"] != base64.StdEncoding.EncodeToString(bad) || body["args"] != nil {
		t.Fatalf("refused event: %s %v", kind, body)
	}

	args := []byte(`{ "path" : "/tmp/x", "n": 1.50 }`)
	id, err := l.RecordCall(ctx, CallStart{SessionID: s.ID(), RequestID: "7", Server: "fs", Tool: "write", Exposed: "fs__write",
		PinDigest: "pd", Args: args, Decision: "allow", Rule: 2, Class: "write", Reason: "rule 2"})
	if err != nil {
		t.Fatal(err)
	}
	row, err = l.Call(ctx, id)
	wantDigest, _ := canon.Digest(args)
	if err != nil || row.State != StateStarted || string(row.Args) != string(args) || row.ArgsDigest != wantDigest ||
		row.Rule != 2 || row.Exposed != "fs__write" || row.RequestID != "7" || row.DecodeError != "" {
		t.Fatalf("allowed call: %+v %v", row, err)
	}
	kind, body = lastEvent(t, l, callSubject(id))
	if kind != "call.started" || body["args_digest"] != wantDigest || body["decision"] != "allow" {
		t.Fatalf("started event: %s %v", kind, body)
	}
	if a, _ := json.Marshal(body["args"]); string(a) != `{"n":1.5,"path":"/tmp/x"}` {
		t.Fatalf("event args %s", a)
	}

	denyID, err := l.RecordCall(ctx, CallStart{SessionID: s.ID(), Server: "fs", Tool: "rm", Args: []byte(`{}`), Decision: "deny"})
	if err != nil {
		t.Fatal(err)
	}
	if row, _ := l.Call(ctx, denyID); row.State != StateRefused {
		t.Fatalf("denied call state %q", row.State)
	}
	if _, err := l.RecordCall(ctx, CallStart{SessionID: "no-such-session", Server: "fs", Tool: "w", Decision: "allow"}); err == nil {
		t.Fatal("call with unknown session accepted (foreign keys off?)")
	}
}

// Proves outcomes are compare-and-set with their events, and
// RecordLateOutcome (L6) fills late_* without changing the state.
func TestOutcomes(t *testing.T) {
	ctx := context.Background()
	l := openTest(t, "", Options{})
	s := startSession(t, l)
	start := CallStart{SessionID: s.ID(), Server: "fs", Tool: "read", Args: []byte(`{}`), Decision: "allow"}

	id, _ := l.RecordCall(ctx, start)
	o := Outcome{State: StateDone, ResultDigest: "rd", ResultBytes: 42, Duration: 1500 * time.Millisecond}
	if err := l.RecordOutcome(ctx, id, o); err != nil {
		t.Fatal(err)
	}
	if err := l.RecordOutcome(ctx, id, Outcome{State: StateFailed}); !errors.Is(err, ErrConflict) {
		t.Fatalf("second outcome: %v, want ErrConflict", err)
	}
	if err := l.RecordLateOutcome(ctx, id, o); !errors.Is(err, ErrConflict) {
		t.Fatalf("late outcome for a done call: %v, want ErrConflict", err)
	}
	row, _ := l.Call(ctx, id)
	if row.State != StateDone || row.ResultDigest != "rd" || row.ResultBytes != 42 || row.Duration != 1500*time.Millisecond || row.EndedAt.IsZero() || row.Late != nil {
		t.Fatalf("done row: %+v", row)
	}
	if kind, _ := lastEvent(t, l, callSubject(id)); kind != "call.done" {
		t.Fatalf("event %s", kind)
	}
	if err := l.RecordOutcome(ctx, id, Outcome{State: "weird"}); err == nil {
		t.Fatal("unknown outcome state accepted")
	}

	cid, _ := l.RecordCall(ctx, start)
	if err := l.RecordOutcome(ctx, cid, Outcome{State: StateCancelled, Err: "host cancelled"}); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel() // the host gave up; the late outcome is still written on a ctx that outlives it
	late := Outcome{State: StateDone, ResultDigest: "late", ResultBytes: 7, IsError: true, Err: "x", Duration: 3 * time.Second}
	if err := l.RecordLateOutcome(context.WithoutCancel(cctx), cid, late); err != nil {
		t.Fatal(err)
	}
	row, _ = l.Call(ctx, cid)
	if row.State != StateCancelled || row.Late == nil || *row.Late != late || row.DecodeError != "" {
		t.Fatalf("late row: %+v late=%+v", row, row.Late)
	}
	if kind, _ := lastEvent(t, l, callSubject(cid)); kind != "call.late_outcome" {
		t.Fatalf("event %s", kind)
	}
	if err := l.RecordLateOutcome(ctx, cid, late); !errors.Is(err, ErrConflict) {
		t.Fatalf("second late outcome: %v", err)
	}
}

// Prompt gets and resource reads are calls with their kind: recorded,
// listed, filtered, and their events say the kind; a kind the ledger does
// not know is refused; a get of a name nothing exposes is recorded under
// the name the host used.
func TestRecordCall_Kinds(t *testing.T) {
	ctx := context.Background()
	l := openTest(t, "", Options{})
	s := startSession(t, l)
	toolID, err := l.RecordCall(ctx, CallStart{SessionID: s.ID(), Server: "every", Tool: "echo", Decision: "allow"})
	if err != nil {
		t.Fatal(err)
	}
	promptID, err := l.RecordCall(ctx, CallStart{Kind: KindPrompt, SessionID: s.ID(), Server: "every", Tool: "simple-prompt",
		Exposed: "every__simple-prompt", Args: []byte(`{"a":"b"}`), Decision: "allow", Rule: 1, Class: "read"})
	if err != nil {
		t.Fatal(err)
	}
	resID, err := l.RecordCall(ctx, CallStart{Kind: KindResource, SessionID: s.ID(), Server: "fs", Tool: "file:///etc/passwd",
		Exposed: "mcp-guard://fs/file:///etc/passwd", Args: []byte(`{"uri":"file:///etc/passwd"}`), Decision: "deny", Rule: 2, Class: "read"})
	if err != nil {
		t.Fatal(err)
	}
	unknownID, err := l.RecordCall(ctx, CallStart{Kind: KindPrompt, SessionID: s.ID(), Exposed: "every__nope", Decision: "unknown_prompt"})
	if err != nil {
		t.Fatal(err)
	}
	// What an upstream asked of the host: the method is the tool.
	clientIDs := map[int64]string{}
	for kind, method := range map[string]string{KindSampling: "sampling/createMessage", KindElicitation: "elicitation/create", KindRoots: "roots/list"} {
		id, err := l.RecordCall(ctx, CallStart{Kind: kind, SessionID: s.ID(), Server: "every", Tool: method, Args: []byte(`{}`), Decision: "allow"})
		if err != nil {
			t.Fatal(err)
		}
		clientIDs[id] = kind
	}
	if _, err := l.RecordCall(ctx, CallStart{Kind: "completion", SessionID: s.ID(), Server: "a", Tool: "b", Decision: "allow"}); err == nil {
		t.Fatal("an unknown kind was recorded")
	}
	want := map[int64]string{toolID: KindTool, promptID: KindPrompt, resID: KindResource, unknownID: KindPrompt}
	for id, kind := range clientIDs {
		want[id] = kind
	}
	for id, want := range want {
		row, err := l.Call(ctx, id)
		if err != nil || row.Kind != want || row.DecodeError != "" {
			t.Fatalf("call %d: kind %q (%v, %q); want %q", id, row.Kind, err, row.DecodeError, want)
		}
		_, body := lastEvent(t, l, callSubject(id))
		if got, _ := body["kind"].(string); want == KindTool && got != "" || want != KindTool && got != want {
			t.Fatalf("call %d's event kind %q; want %q (absent for tools)", id, got, want)
		}
	}
	rows, err := l.Calls(ctx, CallFilter{Kind: KindPrompt})
	if err != nil || len(rows) != 2 || rows[0].ID != unknownID || rows[1].ID != promptID {
		t.Fatalf("prompt calls: %+v %v", rows, err)
	}
	if rows, _ := l.Calls(ctx, CallFilter{Kind: KindTool}); len(rows) != 1 || rows[0].ID != toolID {
		t.Fatalf("tool calls: %+v", rows)
	}
	if rows, _ := l.Calls(ctx, CallFilter{Kind: KindRoots}); len(rows) != 1 || clientIDs[rows[0].ID] != KindRoots || rows[0].Tool != "roots/list" {
		t.Fatalf("roots calls: %+v", rows)
	}
	if rep, err := l.Verify(ctx); err != nil || !rep.OK {
		t.Fatalf("verify: %+v %v", rep, err)
	}
}

// A ledger made before calls had a kind opens at the current schema, and
// its calls read as tool calls.
func TestMigration_OldCallsAreToolCalls(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	db := plainDB(t, path)
	for _, m := range migrations()[:3] {
		mustExec(t, db, m)
	}
	mustExec(t, db, "PRAGMA user_version = 3")
	mustExec(t, db, `INSERT INTO sessions (id, kind, host, pid, started_at, heartbeat_at, ended_at) VALUES ('old', 'serve', 'h', 1, 0, 0, 1)`)
	mustExec(t, db, `INSERT INTO calls (session_id, server, tool, decision, state, started_at) VALUES ('old', 'fs', 'read', 'deny', 'refused', 0)`)
	db.Close()
	l := openTest(t, path, Options{})
	rows, err := l.Calls(context.Background(), CallFilter{Kind: KindTool})
	if err != nil || len(rows) != 1 || rows[0].Kind != KindTool || rows[0].DecodeError != "" {
		t.Fatalf("old call after migration: %+v %v", rows, err)
	}
}

// Arguments the gate already hashed are recorded from that work, but only
// when it was done on exactly these bytes: a Digested of other arguments is
// ignored, and the row, its digest and its event are the arguments' own.
func TestRecordCall_ArgsDigestedOnlyForItsOwnBytes(t *testing.T) {
	ctx := context.Background()
	l := openTest(t, "", Options{})
	s := startSession(t, l)
	args := []byte(`{ "path" : "/tmp/x", "n": 1.50 }`)
	want, _ := canon.Digest(args)
	same, _ := canon.DigestOf(args)
	other, _ := canon.DigestOf([]byte(`{"path":"/etc/shadow"}`))
	for name, d := range map[string]canon.Digested{"same": same, "other": other, "none": {}} {
		id, err := l.RecordCall(ctx, CallStart{SessionID: s.ID(), Server: "fs", Tool: "read", Args: args, ArgsDigested: d, Decision: "allow"})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		row, err := l.Call(ctx, id)
		if err != nil || row.ArgsDigest != want || string(row.Args) != string(args) || row.DecodeError != "" {
			t.Fatalf("%s: row %+v %v", name, row, err)
		}
		_, body := lastEvent(t, l, callSubject(id))
		if a, _ := json.Marshal(body["args"]); body["args_digest"] != want || string(a) != `{"n":1.5,"path":"/tmp/x"}` {
			t.Fatalf("%s: event args %s digest %v", name, a, body["args_digest"])
		}
	}
	if rep, err := l.Verify(ctx); err != nil || !rep.OK {
		t.Fatalf("verify: %+v %v", rep, err)
	}
}
