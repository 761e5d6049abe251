package ledger

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/mcp-guard/mcp-guard/internal/canon"
)

// A call's events are written member by member (canon.Object); their
// bodies are byte for byte what the map they used to be encodes to, so
// that events written before and after read, hash and verify alike.
func TestCallEventBodiesAreTheMapsTheyWere(t *testing.T) {
	ctx := context.Background()
	l := openTest(t, filepath.Join(t.TempDir(), "ledger.db"), Options{})
	sess := startSession(t, l)
	raw := []byte(`{"b": 2, "a": "\u00e9"}`)
	digested, err := canon.DigestOf(raw)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range []CallStart{
		{RequestID: "7", Server: "s", Tool: "t", Exposed: "s__t", PinDigest: "p", Args: []byte(`{"x":[1,{"y":null}]}`), Decision: "allow", Rule: 1, Class: "read"},
		{RequestID: "\"q\"", Server: "s", Tool: "t", Args: raw, ArgsDigested: digested, Decision: "allow", Reason: "r é", Kind: KindPrompt},
		{Server: "s", Tool: "t", ArgsInvalid: []byte{0xff, '{'}, Decision: "deny", Rule: -1, Kind: KindSampling},
		{Exposed: "nope", Decision: "unknown_tool"},
	} {
		c.SessionID = sess.ID()
		id, err := l.RecordCall(ctx, c)
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		allowed := c.Decision == "allow"
		o := Outcome{State: StateDone, ResultDigest: "d", ResultBytes: 12, IsError: i%2 == 1, Err: "e" + strconv.Itoa(i), Duration: 3 * time.Millisecond}
		if allowed {
			if err := l.RecordOutcome(ctx, id, o); err != nil {
				t.Fatalf("outcome %d: %v", i, err)
			}
		}
		evs, err := l.Events(ctx, 0, 1000)
		if err != nil {
			t.Fatal(err)
		}
		started, outcome := evs[len(evs)-1], evs[len(evs)-1]
		if allowed {
			started = evs[len(evs)-2]
		}
		var args, invalid any
		switch {
		case c.ArgsDigested.Of(c.Args):
			args = c.ArgsDigested
		case len(c.Args) > 0:
			args = json.RawMessage(c.Args)
		}
		if len(c.ArgsInvalid) > 0 {
			invalid = base64.StdEncoding.EncodeToString(c.ArgsInvalid)
		}
		argsDigest := ""
		if len(c.Args) > 0 {
			argsDigest = digestOf(t, c.Args)
		}
		want := map[string]any{
			"id": id, "session": c.SessionID, "request_id": c.RequestID, "server": c.Server, "tool": c.Tool,
			"exposed": c.Exposed, "pin_digest": c.PinDigest, "args": args, "args_digest": argsDigest,
			"args_invalid": invalid, "decision": c.Decision, "rule": int64(c.Rule), "class": c.Class,
			"reason": c.Reason, "state": map[bool]string{true: StateStarted, false: StateRefused}[allowed],
			"rows": map[string]string{"calls:" + strconv.FormatInt(id, 10): boundDigest(t, started.Body)},
		}
		if c.Kind != "" {
			want["kind"] = c.Kind
		}
		sameBody(t, started, want)
		if !allowed {
			continue
		}
		sameBody(t, outcome, map[string]any{
			"id": id, "state": o.State, "result_digest": o.ResultDigest, "result_bytes": o.ResultBytes,
			"is_error": o.IsError, "error": o.Err, "duration_ms": o.Duration.Milliseconds(),
			"rows": map[string]string{"calls:" + strconv.FormatInt(id, 10): boundDigest(t, outcome.Body)},
		})
	}
	if rep, err := l.Verify(ctx); err != nil || !rep.OK {
		t.Fatalf("verify: %+v %v", rep, err)
	}
}

func sameBody(t *testing.T, ev Event, want map[string]any) {
	t.Helper()
	b, err := canon.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ev.Body, b) {
		t.Fatalf("%s body\n%s\nthe map encodes to\n%s", ev.Kind, ev.Body, b)
	}
}

// boundDigest is the one row digest an event's body binds.
func boundDigest(t *testing.T, body []byte) string {
	t.Helper()
	var b struct{ Rows map[string]string }
	if err := json.Unmarshal(body, &b); err != nil || len(b.Rows) != 1 {
		t.Fatalf("body %s: rows %v (%v)", body, b.Rows, err)
	}
	for _, d := range b.Rows {
		return d
	}
	return ""
}

func digestOf(t *testing.T, raw []byte) string {
	t.Helper()
	d, err := canon.Digest(raw)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
