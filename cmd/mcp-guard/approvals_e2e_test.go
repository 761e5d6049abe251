package main

import (
	"context"
	"database/sql"
	"io"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-guard/mcp-guard/ledger"
)

const askRules = `
[[rule]]
server = "db"
tool = "echo"
class = "write"
action = "ask"

[[rule]]
server = "db"
tool = "*"
class = "read"
action = "allow"
`

// pendingApproval waits for the one pending approval and returns its ID and
// the digest `approvals show` prints.
func (e *env) pendingApproval(cfg string) (string, string) {
	e.t.Helper()
	var out string
	eventually(e.t, "a pending approval", func() bool {
		out, _ = e.mcpGuard("approvals", "--config", cfg)
		return regexp.MustCompile(`(?m)^\d+\s+pending`).MatchString(out)
	})
	id := regexp.MustCompile(`(?m)^(\d+)\s+pending`).FindStringSubmatch(out)[1]
	show, code := e.mcpGuard("approvals", "show", id, "--config", cfg)
	m := regexp.MustCompile(`(?m)^shown\s+([0-9a-f]{64})$`).FindStringSubmatch(show)
	if code != 0 || m == nil {
		e.t.Fatalf("approvals show (exit %d):\n%s", code, show)
	}
	return id, m[1]
}

type callResult struct {
	res *mcp.CallToolResult
	err error
}

func (h *host) callAsync(name string, args any, timeout time.Duration) <-chan callResult {
	ch := make(chan callResult, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		res, err := h.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		ch <- callResult{res, err}
	}()
	return ch
}

// An ask holds the call; approve from another process, naming what was
// shown, runs it once; a stale digest and a second decision are refused.
func TestApprovals_ApproveRunsTheCallOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := e.config("[limits]\napproval_wait = \"20s\"\n", e.fake("db", ledgerTools), askRules)
	h := e.connect(cfg, "")
	done := h.callAsync("db__echo", map[string]any{"q": "drop \u202e table"}, 30*time.Second)
	id, shown := e.pendingApproval(cfg)
	show, _ := e.mcpGuard("approvals", "show", id, "--config", cfg)
	if !strings.Contains(show, `"q": "drop \u{202E} table"`) || !strings.Contains(show, "class     write (rule 1)") {
		t.Fatalf("the operator does not read the call escaped:\n%s", show)
	}
	if n := len(e.calls("db")); n != 0 {
		t.Fatalf("the held call reached the upstream before approval")
	}
	if out, code := e.mcpGuard("approve", id, "--config", cfg, "--shown", strings.Repeat("a", 64)); code != 1 || !strings.Contains(out, "not the one with digest") {
		t.Fatalf("approve with a stale digest (exit %d): %s", code, out)
	}
	if out, code := e.mcpGuard("approve", id, "--config", cfg); code != 2 || !strings.Contains(out, "give --shown") {
		t.Fatalf("approve without --shown, no terminal (exit %d): %s", code, out)
	}
	// Two operators approve at once: exactly one wins.
	var wg sync.WaitGroup
	codes := make([]int, 2)
	for i := range 2 {
		wg.Add(1)
		go func() { defer wg.Done(); _, codes[i] = e.mcpGuard("approve", id, "--config", cfg, "--shown", shown) }()
	}
	wg.Wait()
	if codes[0]+codes[1] != 1 {
		t.Fatalf("two concurrent approvals exited %v; want exactly one success", codes)
	}
	r := <-done
	if r.err != nil || r.res.IsError {
		t.Fatalf("approved call: %v %v", r.err, r.res)
	}
	if n := len(e.calls("db")); n != 1 {
		t.Fatalf("upstream got %d calls, want 1", n)
	}
	rows, _ := e.openLedger().Calls(context.Background(), ledger.CallFilter{})
	if len(rows) != 1 || rows[0].Decision != "ask" {
		t.Fatalf("ledger rows %+v", rows)
	}
	eventually(t, "the outcome", func() bool {
		rows, _ := e.openLedger().Calls(context.Background(), ledger.CallFilter{})
		return rows[0].State == "done"
	})
}

// An approval nobody decided within its lifetime cannot be decided; a host
// cancel withdraws the approval.
func TestApprovals_ExpiredAndWithdrawnCannotBeDecided(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := e.config("[limits]\napproval_wait = \"1s\"\ngrant_ttl = \"100ms\"\n", e.fake("db", ledgerTools), askRules)
	h := e.connect(cfg, "")
	r := <-h.callAsync("db__echo", map[string]any{"q": 1}, 30*time.Second)
	if r.err != nil || !r.res.IsError {
		t.Fatalf("not decided in time: %v %v", r.err, r.res)
	}
	as, _ := e.openLedger().Approvals(context.Background(), "", 0, 10)
	// Past its lifetime (approval_wait and grant_ttl) the CLI shows it
	// expired; then it cannot be decided.
	eventually(t, "approvals show to say the approval expired", func() bool {
		out, _ := e.mcpGuard("approvals", "show", itoa(as[0].ID), "--config", cfg)
		return strings.Contains(out, "(expired, call ")
	})
	if out, code := e.mcpGuard("approve", itoa(as[0].ID), "--config", cfg, "--shown", as[0].PresentationDigest); code != 1 || !strings.Contains(out, "expired") {
		t.Fatalf("approving an expired approval (exit %d): %s", code, out)
	}

	ctx, cancel := context.WithCancel(context.Background())
	go h.CallTool(ctx, &mcp.CallToolParams{Name: "db__echo", Arguments: map[string]any{"q": 2}})
	eventually(t, "the second approval", func() bool {
		as, _ := e.openLedger().Approvals(context.Background(), ledger.ApprovalPending, 0, 10)
		for _, a := range as {
			if strings.Contains(string(a.Args), `"q":2`) {
				return true
			}
		}
		return false
	})
	cancel()
	eventually(t, "the approval withdrawn", func() bool {
		as, _ := e.openLedger().Approvals(context.Background(), ledger.ApprovalWithdrawn, 0, 10)
		return len(as) == 1
	})
	if n := len(e.calls("db")); n != 0 {
		t.Fatalf("upstream got %d calls", n)
	}
}

func mustAtoi(t *testing.T, s string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A pending approval whose row was changed outside mcp-guard is refused:
// it cannot be shown, decided or run.
func TestApprovals_TamperedRowRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := e.config("[limits]\napproval_wait = \"20s\"\n", e.fake("db", ledgerTools), askRules)
	h := e.connect(cfg, "")
	done := h.callAsync("db__echo", map[string]any{"q": "harmless"}, 30*time.Second)
	id, shown := e.pendingApproval(cfg)
	db, err := sql.Open("sqlite", filepath.Join(e.state, "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE approvals SET args = CAST('{"q":"rm -rf /"}' AS BLOB) WHERE id = ?`, id); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if out, code := e.mcpGuard("approve", id, "--config", cfg, "--shown", shown); code != 1 || !strings.Contains(out, "does not match its binding") {
		t.Fatalf("approving a tampered row (exit %d): %s", code, out)
	}
	r := <-done
	if r.err != nil || !r.res.IsError || !strings.Contains(resultText(r.res), "changed outside mcp-guard") {
		t.Fatalf("tampered approval: %v %q", r.err, resultText(r.res))
	}
	if n := len(e.calls("db")); n != 0 {
		t.Fatalf("upstream got %d calls", n)
	}
}

// L7: after a crash interrupted a call to a tool not classified read, the
// identical re-issue waits for the operator; once it ran with their
// approval, it is allowed again; other arguments never waited.
func TestApprovals_InterruptedCallReissueWaitsForTheOperator(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := filepath.Join(e.dir, "config.toml")
	rules := `
[[rule]]
server = "db"
tool = "slow"
class = "write"
action = "allow"

[[rule]]
server = "db"
tool = "*"
class = "read"
action = "allow"
`
	writeFile(t, cfg, "[ledger]\npath = \""+filepath.Join(e.state, "ledger.db")+"\"\nlease_ttl = \"1s\"\n\n[limits]\napproval_wait = \"20s\"\n\n"+
		e.fake("db", `{"tools":[{"name":"slow","inputSchema":{"type":"object"}},{"name":"echo","inputSchema":{"type":"object"}}],"calls":{"slow":{"do":"sleep","ms":2000}}}`)+rules)
	e.binary = true // a serve process killed mid-call
	r := e.rawConnect(cfg)
	r.send(`{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":"db__slow","arguments":{"n":1}}}`)
	eventually(t, "the slow call to reach the upstream", func() bool { return len(e.calls("db")) == 1 })
	r.cmd.Process.Signal(syscall.SIGKILL)
	r.cmd.Wait()
	e.binary = false

	h := e.connect(cfg, "")
	led := e.openLedger()
	eventually(t, "the call marked interrupted", func() bool { return e.callsByTool(led)["db__slow"].State == "interrupted" })
	if res, err := h.call(t, "db__slow", map[string]any{"n": 2}); err != nil || res.IsError {
		t.Fatalf("other arguments: %v %v", err, res)
	}
	done := h.callAsync("db__slow", map[string]any{"n": 1}, 30*time.Second)
	id, shown := e.pendingApproval(cfg)
	before := len(e.calls("db"))
	e.mcpGuard("approve", id, "--config", cfg, "--shown", shown)
	if r := <-done; r.err != nil || r.res.IsError {
		t.Fatalf("approved re-issue: %v %v", r.err, r.res)
	}
	if n := len(e.calls("db")); n != before+1 {
		t.Fatalf("upstream got %d calls after the approval, want %d", n, before+1)
	}
	if res, err := h.call(t, "db__slow", map[string]any{"n": 1}); err != nil || res.IsError {
		t.Fatalf("after it ran with approval, the call is allowed again: %v %v", err, res)
	}
}

// watch, in a real terminal: a waiting call appears with a bell, escaped;
// "a" approves it (it runs once), "d" and a reason deny the next.
func TestWatch_ApproveAndDenyFromATerminal(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := e.config("[limits]\napproval_wait = \"20s\"\n", e.fake("db", ledgerTools), askRules)
	h := e.connect(cfg, "")
	in, out := e.startWatch(cfg)

	first := h.callAsync("db__echo", map[string]any{"q": "ok \u202e"}, 30*time.Second)
	eventually(t, "the first approval on screen", func() bool { return strings.Contains(out.String(), "[a]pprove  [d]eny  [s]kip > ") })
	if s := out.String(); !regexp.MustCompile(`ledger head: seq [0-9]+ hash [0-9a-f]{64}`).MatchString(s) {
		t.Fatalf("watch does not print the ledger's head for the operator to write down:\n%q", s)
	}
	if s := out.String(); !strings.Contains(s, "\a") || !strings.Contains(s, `"q": "ok \u{202E}"`) || strings.Contains(s, "\u202e") {
		t.Fatalf("watch screen:\n%q", s)
	}
	io.WriteString(in, "a\n")
	if r := <-first; r.err != nil || r.res.IsError {
		t.Fatalf("approved from watch: %v %v", r.err, r.res)
	}
	second := h.callAsync("db__echo", map[string]any{"q": 2}, 30*time.Second)
	eventually(t, "the second approval on screen", func() bool { return strings.Count(out.String(), "[a]pprove  [d]eny  [s]kip > ") == 2 })
	io.WriteString(in, "d\n")
	eventually(t, "the reason prompt", func() bool { return strings.Contains(out.String(), "reason (the model reads it) > ") })
	io.WriteString(in, "looks odd\n")
	r := <-second
	if r.err != nil || !r.res.IsError || !strings.Contains(resultText(r.res), "looks odd") {
		t.Fatalf("denied from watch: %v %q", r.err, resultText(r.res))
	}
	if n := len(e.calls("db")); n != 1 {
		t.Fatalf("upstream got %d calls, want 1", n)
	}
}

// Two serve processes (as Claude Desktop starts one per entry) share one
// ledger: the operator sees and decides both processes' waiting calls.
func TestApprovals_TwoServeProcessesShareTheLedger(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := e.config("[limits]\napproval_wait = \"20s\"\n", e.fake("db", ledgerTools), askRules)
	h1, h2 := e.connect(cfg, ""), e.connect(cfg, "")
	c1 := h1.callAsync("db__echo", map[string]any{"from": 1}, 30*time.Second)
	c2 := h2.callAsync("db__echo", map[string]any{"from": 2}, 30*time.Second)
	led := e.openLedger()
	var as []ledger.Approval
	eventually(t, "both approvals", func() bool {
		as, _ = led.Approvals(context.Background(), ledger.ApprovalPending, 0, 10)
		return len(as) == 2
	})
	if as[0].SessionID == as[1].SessionID {
		t.Fatalf("both approvals came from one session: %+v", as)
	}
	for _, a := range as {
		if out, code := e.mcpGuard("approve", itoa(a.ID), "--config", cfg, "--shown", a.PresentationDigest); code != 0 {
			t.Fatalf("approve %d: %s", a.ID, out)
		}
	}
	for _, c := range []<-chan callResult{c1, c2} {
		if r := <-c; r.err != nil || r.res.IsError {
			t.Fatalf("approved call: %v %v", r.err, r.res)
		}
	}
	if n := len(e.calls("db")); n != 2 {
		t.Fatalf("upstreams got %d calls, want 2", n)
	}
	if rep, err := led.Verify(context.Background()); err != nil || !rep.OK {
		t.Fatalf("verify: %+v %v", rep, err)
	}
}

// startWatch runs `mcp-guard watch` on cfg on a terminal of its own, with
// env added to its environment; it returns watch's input and everything it
// printed so far. The test's cleanup stops it and whatever it started.
func (e *env) startWatch(cfg string, env ...string) (io.WriteCloser, *lockedBuffer) {
	e.t.Helper()
	w := exec.Command(bins.guard, "watch", "--config", cfg)
	w.Env = append(append([]string{"HOME=" + e.dir, "PATH=/usr/bin:/bin", "TERM=dumb"}, env...), coverEnv()...)
	term := startOnTerminal(e.t, w)
	return term.in, term.out
}
