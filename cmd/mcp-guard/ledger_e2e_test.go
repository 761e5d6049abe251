package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	_ "modernc.org/sqlite"

	"github.com/mcp-guard/mcp-guard/ledger"
)

// openLedger opens the env's ledger the way a second mcp-guard process would.
func (e *env) openLedger() *ledger.Ledger {
	e.t.Helper()
	led, err := ledger.Open(context.Background(), filepath.Join(e.state, "ledger.db"), ledger.Options{})
	if err != nil {
		e.t.Fatalf("open ledger: %v", err)
	}
	e.t.Cleanup(func() { led.Close() })
	return led
}

func (e *env) callsByTool(led *ledger.Ledger) map[string]ledger.CallRow {
	e.t.Helper()
	rows, err := led.Calls(context.Background(), ledger.CallFilter{Limit: 1000})
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[string]ledger.CallRow{}
	for _, r := range rows {
		out[r.Exposed] = r
	}
	return out
}

// mcpGuard runs mcp-guard with args and returns its output (stdout and
// stderr, as they were written) and exit code: in this process unless the
// env asks for the binary.
func (e *env) mcpGuard(args ...string) (string, int) {
	e.t.Helper()
	return e.mcpGuardIn("", args...)
}

// mcpGuardIn is mcpGuard with stdin as mcp-guard's input.
func (e *env) mcpGuardIn(stdin string, args ...string) (string, int) {
	e.t.Helper()
	if e.inProcess() {
		return e.runHere(stdin, args...)
	}
	cmd := exec.Command(bins.guard, args...)
	cmd.Env = append(e.cliEnv(), coverEnv()...)
	if e.wrap != nil {
		e.wrap(cmd)
	}
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		e.t.Fatal(err)
	}
	return string(out), code
}

const ledgerTools = `{"tools":[
{"name":"slow","inputSchema":{"type":"object"}},
{"name":"echo","inputSchema":{"type":"object"}},
{"name":"drop","inputSchema":{"type":"object"}}],
"calls":{"slow":{"do":"sleep","ms":30000}}}`

const ledgerRules = `
[[rule]]
server = "db"
tool = "drop"
class = "destructive"
action = "deny"
reason = "never"

[[rule]]
server = "db"
tool = "*"
class = "read"
action = "allow"
`

// Every call is in the ledger before the upstream sees it, refused ones too;
// the chain verifies and the log shows them.
func TestServe_RecordsEveryCallBeforeForwarding(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := e.config(e.fake("db", ledgerTools), ledgerRules)
	h := e.connect(cfg, "2025-11-25")
	led := e.openLedger()

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		h.CallTool(ctx, &mcp.CallToolParams{Name: "db__slow", Arguments: json.RawMessage(`{"q":"select 1"}`)})
		close(done)
	}()
	eventually(t, "the slow call to reach the upstream", func() bool { return len(e.calls("db")) == 1 })
	row, ok := e.callsByTool(led)["db__slow"]
	if !ok || row.State != "started" || row.Decision != "allow" || string(row.Args) != `{"q":"select 1"}` || row.ArgsDigest == "" {
		t.Fatalf("while the upstream works on it, the ledger holds %+v (ok=%v); want a started, allowed call with its argument bytes", row, ok)
	}
	cancel()
	<-done
	eventually(t, "the cancel to be recorded", func() bool { return e.callsByTool(led)["db__slow"].State == "cancelled" })

	if res, err := h.call(t, "db__echo", map[string]any{"x": 1}); err != nil || res.IsError {
		t.Fatalf("echo: %v", err)
	}
	if res, err := h.call(t, "db__drop", map[string]any{"table": "t"}); err != nil || !res.IsError || !strings.Contains(resultText(res), "(ledger call ") {
		t.Fatalf("drop: %v %v", err, res)
	}
	h.call(t, "db__nope", map[string]any{})

	rows := e.callsByTool(led)
	if r := rows["db__echo"]; r.State != "done" || len(r.ResultDigest) != 64 || r.ResultBytes == 0 {
		t.Fatalf("echo row %+v", r)
	}
	if r := rows["db__drop"]; r.State != "refused" || r.Decision != "deny" || r.Rule != 1 || r.Reason != "never" {
		t.Fatalf("drop row %+v", r)
	}
	if r := rows["db__nope"]; r.Decision != "unknown_tool" || r.State != "refused" {
		t.Fatalf("unknown name row %+v", r)
	}
	if n := len(e.calls("db")); n != 2 {
		t.Fatalf("upstream got %d calls, want 2 (slow, echo)", n)
	}

	out, code := e.mcpGuard("verify", "--config", cfg)
	if code != 0 || !strings.Contains(out, "hash chain intact") {
		t.Fatalf("verify: exit %d\n%s", code, out)
	}
	out, code = e.mcpGuard("log", "--config", cfg)
	for _, want := range []string{"db/slow allow cancelled", "db/echo allow done", "db/drop deny refused rule=1", "db__nope unknown_tool refused"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("log (exit %d) lacks %q:\n%s", code, want, out)
		}
	}
}

// kill -9 of serve during a slow call: the next serve marks it interrupted.
func TestServe_KilledServeLeavesItsCallInterrupted(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := filepath.Join(e.dir, "config.toml")
	src := "[ledger]\npath = " + `"` + filepath.Join(e.state, "ledger.db") + `"` + "\nlease_ttl = \"1s\"\n\n" + e.fake("db", ledgerTools) + ledgerRules
	writeFile(t, cfg, src)
	e.binary = true // a serve process killed mid-call
	r := e.rawConnect(cfg)
	r.send(`{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":"db__slow","arguments":{}}}`)
	eventually(t, "the slow call to reach the upstream", func() bool { return len(e.calls("db")) == 1 })
	if err := r.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	r.cmd.Wait()
	e.binary = false

	h := e.connect(cfg, "")
	led := e.openLedger()
	eventually(t, "the call to be marked interrupted", func() bool { return e.callsByTool(led)["db__slow"].State == "interrupted" })
	h.toolNames(t)
}

// verify names the first event that was edited behind mcp-guard's back.
func TestVerify_NamesTheFirstTamperedEvent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := e.config(e.fake("db", ledgerTools), ledgerRules)
	h := e.connect(cfg, "")
	for range 3 {
		h.call(t, "db__echo", map[string]any{"n": 1})
	}
	h.Close()
	db, err := sql.Open("sqlite", filepath.Join(e.state, "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE events SET body = CAST(replace(CAST(body AS TEXT), '"n":1', '"n":2') AS BLOB) WHERE seq = (SELECT min(seq) FROM events WHERE kind = 'call.started')`); err != nil {
		t.Fatal(err)
	}
	var seq int64
	db.QueryRow(`SELECT min(seq) FROM events WHERE kind = 'call.started'`).Scan(&seq)
	db.Close()
	out, code := e.mcpGuard("verify", "--config", cfg)
	if code != 1 || !regexp.MustCompile(`damaged at event `+itoa(seq)+`\b`).MatchString(out) {
		t.Fatalf("verify after an edit: exit %d\n%s", code, out)
	}
}

// log escapes what a model or server chose and pages with --before.
func TestLog_EscapesHostChosenTextAndPages(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := e.config(e.fake("db", ledgerTools), ledgerRules)
	r := e.rawConnect(cfg)
	r.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"evil\u001b[2J\u202eexe","arguments":{}}}`)
	r.waitID(`1`)
	for i := 2; i <= 4; i++ {
		id := itoa(int64(i))
		r.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"db__echo","arguments":{}}}`)
		r.waitID(id)
	}
	out, code := e.mcpGuard("log", "--config", cfg)
	if code != 0 || strings.ContainsAny(out, "\x1b\u202e") || !strings.Contains(out, `evil\u{001B}[2J\u{202E}exe`) {
		t.Fatalf("log did not escape the host's text (exit %d):\n%q", code, out)
	}
	out, _ = e.mcpGuard("log", "--config", cfg, "--limit", "2")
	m := regexp.MustCompile(`more: mcp-guard log --before (\d+)`).FindStringSubmatch(out)
	if m == nil || strings.Count(out, "\n#") > 1 {
		t.Fatalf("first page:\n%s", out)
	}
	out2, _ := e.mcpGuard("log", "--config", cfg, "--limit", "2", "--before", m[1])
	if !strings.Contains(out2, "evil") || strings.Contains(out2, "#"+m[1]+" ") {
		t.Fatalf("second page:\n%s", out2)
	}
}

// A row that will not decode is listed with its decode error; it neither
// stops log nor serve, and is not acted on.
func TestLog_DamagedRowListedWithItsDecodeError(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := e.config(e.fake("db", ledgerTools), ledgerRules)
	h := e.connect(cfg, "")
	h.call(t, "db__echo", map[string]any{"n": 1})
	h.call(t, "db__echo", map[string]any{"n": 2})
	h.Close()
	db, err := sql.Open("sqlite", filepath.Join(e.state, "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE calls SET args = X'7B226E223A' WHERE id = 1`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	out, code := e.mcpGuard("log", "--config", cfg, "-v")
	if code != 0 || !strings.Contains(out, "#1 ") || !strings.Contains(out, "UNREADABLE=") || !strings.Contains(out, "#2 ") {
		t.Fatalf("log with a damaged row (exit %d):\n%s", code, out)
	}
	h2 := e.connect(cfg, "")
	if res, err := h2.call(t, "db__echo", map[string]any{"n": 3}); err != nil || res.IsError {
		t.Fatalf("serve with a damaged row in its ledger: %v", err)
	}
}

// log --follow prints calls as they are recorded.
func TestLog_FollowPrintsNewCalls(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := e.config(e.fake("db", ledgerTools), ledgerRules)
	h := e.connect(cfg, "")
	h.call(t, "db__echo", map[string]any{"n": 1})
	out := &lockedBuffer{}
	follow := e.startHere(out, out, "log", "--config", cfg, "--follow", "--server", "db")
	eventually(t, "the existing call", func() bool { return strings.Contains(out.String(), "#1 ") })
	h.call(t, "db__drop", map[string]any{})
	eventually(t, "the new call to be followed", func() bool { return strings.Contains(out.String(), "db/drop deny refused") })
	if code := follow.stop(); code != 0 {
		t.Fatalf("log --follow ended with exit %d when stopped:\n%s", code, out)
	}
}
