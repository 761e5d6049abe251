package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-guard/mcp-guard/ledger"
)

// jsonLines parses what a --json command printed: every line one JSON
// object with a "type", those of type typ with at least the keys want; none
// holding a raw control, bidi, zero-width or tag character.
func jsonLines(t *testing.T, what, out, typ string, want ...string) []map[string]any {
	t.Helper()
	checkNoRawControl(t, what+" --json", out)
	var recs []map[string]any
	for i, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		if line == "" && out == "" {
			break
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("%s --json: line %d is not a JSON object: %v\n%s", what, i+1, err, line)
		}
		if _, ok := rec["type"].(string); !ok {
			t.Errorf("%s --json: line %d has no type: %s", what, i+1, line)
		}
		for _, k := range want {
			if rec["type"] != typ {
				break
			}
			if _, ok := rec[k]; !ok {
				t.Errorf("%s --json: line %d lacks %q: %s", what, i+1, k, line)
			}
		}
		recs = append(recs, rec)
	}
	return recs
}

// holds reports whether some record's field k is (or, for a string,
// contains) the hostile text, decoded intact.
func holds(recs []map[string]any, k string) bool {
	for _, r := range recs {
		switch v := r[k].(type) {
		case string:
			if strings.Contains(v, hostile) {
				return true
			}
		case map[string]any, []any:
			b, _ := json.Marshal(v)
			var s string
			if strings.Contains(string(b), strings.Trim(hostileJSON(), `"`)) || json.Unmarshal(b, &s) == nil && strings.Contains(s, hostile) {
				return true
			}
		}
	}
	return false
}

// --json on tools, log, log --labels, approvals, pin list, sessions and
// verify prints one JSON object per line with the documented fields; the
// hostile text a server (tool names, descriptions, errors) and a host
// (arguments, the scope it names) chose decodes intact from those fields,
// and no control, bidi, zero-width or tag character is printed raw
// (encoding/json alone leaves U+202E, U+200B and tag characters raw).
func TestJSONOutput_HostileTextEscaped(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	h := hostileJSON()
	script := `{"tools":[
{"name":"echo","description":"echoes","inputSchema":{"type":"object"}},
{"name":"ask","description":"asks","inputSchema":{"type":"object"}},
{"name":"fail","description":"fails","inputSchema":{"type":"object"}},
{"name":"bad` + strings.Trim(h, `"`) + `","description":` + h + `,"inputSchema":{"type":"object"}}],
"calls":{"fail":{"do":"error","code":-32000,"message":` + h + `}}}`
	cfg := e.config("[limits]\napproval_wait = \"60s\"\n",
		e.fake("hx", script),
		e.fake("badlist", `{"errorFor":{"tools/list":{"code":-32603,"message":`+h+`}}}`), `
[[rule]]
server = "hx"
tool = "ask"
class = "write"
action = "ask"

[[rule]]
server = "hx"
tool = "*"
class = "read"
action = "allow"
`)
	run := func(args ...string) (string, int) {
		t.Helper()
		o, er, code := e.guardStreams("", nil, args...)
		checkNoRawControl(t, args[0]+" stderr", er)
		return o, code
	}

	out, code := run("tools", "--json", "--config", cfg)
	recs := jsonLines(t, "tools", out, "tool", "server", "name", "exposed", "hidden", "pin", "class", "action", "rule", "digest")
	if code != 1 || !holds(recs, "name") || !holds(recs, "error") {
		t.Fatalf("tools --json (exit %d) lacks the hostile tool name or the failed server's error:\n%s", code, out)
	}

	// serve refuses a scope name that is not plain (--scope), and names its
	// host itself: a session row with hostile host and scope is written
	// straight to the ledger, as another (older, or tampered) writer could.
	led := e.openLedger()
	sess, err := led.StartSession(context.Background(), ledger.SessionInfo{Kind: "serve", Host: hostile, PID: os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := led.JoinScope(context.Background(), sess.ID(), hostile, time.Minute); err != nil {
		t.Fatal(err)
	}

	// A host calls with hostile arguments.
	hst := e.connect(cfg, "")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	args := map[string]any{"q": hostile, hostile: "key"}
	if _, err := hst.CallTool(ctx, &mcp.CallToolParams{Name: "hx__echo", Arguments: args}); err != nil {
		t.Fatal(err)
	}
	if res, err := hst.CallTool(ctx, &mcp.CallToolParams{Name: "hx__fail", Arguments: args}); err == nil && !res.IsError {
		t.Fatalf("fail: %v", res)
	}
	held := hst.callAsync("hx__ask", args, 60*time.Second)
	id, shown := e.pendingApproval(cfg)

	out, _ = run("approvals", "--json", "--config", cfg)
	recs = jsonLines(t, "approvals", out, "approval", "id", "state", "call", "session", "server", "tool", "class", "rule", "labels", "reason", "presentation_digest", "created_at", "expires_at", "decided_at", "tampered")
	if len(recs) != 1 || recs[0]["state"] != "pending" || recs[0]["tool"] != "ask" {
		t.Fatalf("approvals --json:\n%s", out)
	}
	out, _ = run("sessions", "--json", "--config", cfg)
	recs = jsonLines(t, "sessions", out, "scope", "scope", "sessions", "labels")
	if !holds(recs, "scope") || !strings.Contains(out, `"host":"\u001b[31mRED`) {
		t.Fatalf("sessions --json lacks the hostile scope or host:\n%s", out)
	}

	if _, code := run("deny", id, "--shown", shown, "--reason", hostile, "--config", cfg); code != 0 {
		t.Fatalf("deny: exit %d", code)
	}
	<-held
	out, _ = run("approvals", "--json", "--state", "", "--config", cfg)
	recs = jsonLines(t, "approvals --state ''", out, "approval", "reason")
	if !holds(recs, "reason") {
		t.Fatalf("approvals --json lacks the deny reason:\n%s", out)
	}

	out, code = run("verify", "--json", "--config", cfg)
	recs = jsonLines(t, "verify", out, "verify", "ledger", "ok", "events", "rows", "bad_seq", "bad_row", "problem", "head_seq", "head_hash", "witness", "witness_heads", "covered_seq", "not_covered")
	if code != 0 || len(recs) != 1 || recs[0]["ok"] != true {
		t.Fatalf("verify --json (exit %d):\n%s", code, out)
	}
	head := fmt.Sprintf("head:%v:%v", recs[0]["head_seq"], recs[0]["head_hash"])
	out, code = run("verify", "--json", "--witness", head, "--config", cfg)
	recs = jsonLines(t, "verify --witness", out, "verify", "ok", "witness", "witness_heads", "covered_seq")
	if code != 0 || len(recs) != 1 || recs[0]["ok"] != true || recs[0]["witness"] != head || recs[0]["witness_heads"] != 1.0 {
		t.Fatalf("verify --json --witness %s (exit %d):\n%s", head, code, out)
	}
	out, code = run("verify", "--json", "--witness", "head:2:"+strings.Repeat("0", 64), "--config", cfg)
	recs = jsonLines(t, "verify --witness (other head)", out, "verify", "ok", "problem")
	if code != 1 || len(recs) != 1 || recs[0]["ok"] != false || recs[0]["problem"] == "" {
		t.Fatalf("verify --json against a head the ledger does not have (exit %d):\n%s", code, out)
	}

	// A row edited outside mcp-guard: its text is not shown, as in the table.
	db, err := sql.Open("sqlite", filepath.Join(e.state, "ledger.db")+"?_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`UPDATE approvals SET tool = ? WHERE id = ?`, "ask"+hostile, id); err != nil {
		t.Fatal(err)
	}
	out, _ = run("approvals", "--json", "--state", "", "--config", cfg)
	recs = jsonLines(t, "approvals (tampered)", out, "approval", "tampered")
	if len(recs) != 1 || recs[0]["tampered"] == "" || recs[0]["tool"] != "" || strings.Contains(out, "pwned") {
		t.Fatalf("approvals --json shows a tampered row's text, or does not say it is tampered:\n%s", out)
	}

	out, _ = run("log", "--json", "--config", cfg)
	recs = jsonLines(t, "log", out, "call", "id", "kind", "session", "request_id", "server", "tool", "exposed", "pin_digest",
		"decision", "rule", "class", "reason", "state", "started_at", "ended_at", "duration_ms", "args_digest", "args", "args_invalid",
		"result_digest", "result_bytes", "is_error", "error", "late_outcome", "decode_error")
	if len(recs) < 3 || !holds(recs, "args") || !holds(recs, "error") {
		t.Fatalf("log --json lacks the hostile arguments or error:\n%s", out)
	}
	out, _ = run("log", "--labels", "--json", "--config", cfg)
	jsonLines(t, "log --labels", out, "label_event", "seq", "at", "kind", "scope", "label", "labels", "call", "reason", "session", "decode_error")

	// serve does not pin a tool whose name is not plain text; an older
	// ledger may hold one.
	if _, err := led.ObservePin(context.Background(), "hx", hostile, strings.Repeat("a", 64), []byte(`{"name":`+h+`}`), false); err != nil {
		t.Fatal(err)
	}
	out, _ = run("pin", "list", "--json", "--config", cfg)
	recs = jsonLines(t, "pin list", out, "pin", "server", "tool", "state", "digest", "pending_digest", "updated_at", "decode_error")
	if !holds(recs, "tool") {
		t.Fatalf("pin list --json lacks the hostile tool name:\n%s", out)
	}

	// The same ledger, with the approval row edited: verify says where.
	out, code = run("verify", "--json", "--config", cfg)
	recs = jsonLines(t, "verify (edited)", out, "verify", "ok", "bad_row", "problem")
	if code != 1 || len(recs) != 1 || recs[0]["ok"] != false || recs[0]["bad_row"] != "approvals "+id || recs[0]["problem"] == "" {
		t.Fatalf("verify --json (exit %d) on an edited row:\n%s", code, out)
	}
}
