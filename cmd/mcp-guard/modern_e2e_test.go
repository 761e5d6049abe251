package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-guard/mcp-guard/ledger"
)

// Protocol 2026-07-28 on the host side (PF7): a go-sdk 1.8 host that
// negotiates the stateless revision, over stdio and streamable HTTP, in
// front of a legacy upstream.

const modernVersion = "2026-07-28"

// confirmTools is a legacy upstream whose confirm tool asks the host, with
// a server-to-client elicitation/create, before it answers; its answer
// text is the raw response line it got.
const confirmTools = `{"tools":[{"name":"confirm","inputSchema":{"type":"object"}},{"name":"echo","inputSchema":{"type":"object"}},{"name":"drop","inputSchema":{"type":"object"}}],
"calls":{"confirm":{"do":"serverRequest","method":"elicitation/create","timeoutMs":30000,
 "params":{"message":"Really?","requestedSchema":{"type":"object","properties":{"sure":{"type":"boolean"}},"required":["sure"]}}}}}`

// modernClient is a go-sdk host that answers elicitations with accept
// {"sure":true}, counting them.
func modernClient(elicited *atomic.Int32, mrtr bool) *mcp.Client {
	opts := &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			elicited.Add(1)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"sure": true}}, nil
		},
	}
	if !mrtr {
		opts.MultiRoundTrip = &mcp.MultiRoundTripOptions{Disabled: true}
	}
	return mcp.NewClient(&mcp.Implementation{Name: "modern-host", Version: "1"}, opts)
}

// connectModern starts serve on cfg and connects client over stdio at
// 2026-07-28.
func (e *env) connectModern(cfg string, client *mcp.Client) *host {
	e.t.Helper()
	h := &host{stderr: &lockedBuffer{}}
	h.cmd = e.serveCmd(cfg)
	h.cmd.Stderr = h.stderr
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := client.Connect(ctx, &mcp.CommandTransport{Command: h.cmd, TerminateDuration: 5 * time.Second}, &mcp.ClientSessionOptions{ProtocolVersion: modernVersion})
	if err != nil {
		e.t.Fatalf("connect at %s: %v\n%s", modernVersion, err, h.stderr)
	}
	h.ClientSession = s
	e.t.Cleanup(func() {
		h.Close()
		if e.t.Failed() {
			e.t.Logf("mcp-guard stderr:\n%s", h.stderr)
		}
	})
	return h
}

// modernHTTPServe starts serve --http on cfg with the bearer token
// tok-modern-0123456789abcdef and returns its endpoint.
func (e *env) modernHTTPServe(cfg string) string {
	e.t.Helper()
	tokenFile := filepath.Join(e.dir, "token")
	writeFile(e.t, tokenFile, "tok-modern-0123456789abcdef\n")
	endpoint, _ := e.httpServe(cfg, "--http", "127.0.0.1:0", "--token-file", tokenFile)
	return endpoint
}

// connectModernHTTP connects client to endpoint over streamable HTTP at
// 2026-07-28, with token as its bearer token.
func connectModernHTTP(t *testing.T, endpoint, token string, client *mcp.Client) *mcp.ClientSession {
	t.Helper()
	hc := &http.Client{Transport: bearer{token, http.DefaultTransport}}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: modernVersion})
	if err != nil {
		t.Fatalf("connect over HTTP at %s: %v", modernVersion, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// callRows is the ledger's tool-call rows for the upstream tool name.
func (e *env) callRows(tool string) []ledger.CallRow {
	e.t.Helper()
	rows, err := e.openLedger().Calls(context.Background(), ledger.CallFilter{Limit: 100})
	if err != nil {
		e.t.Fatal(err)
	}
	var out []ledger.CallRow
	for _, r := range rows {
		if r.Tool == tool {
			out = append(out, r)
		}
	}
	return out
}

func callOn(t *testing.T, s *mcp.ClientSession, p *mcp.CallToolParams) (*mcp.CallToolResult, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return s.CallTool(ctx, p)
}

// A call the operator approves, whose upstream then asks the host for
// input: the retry continues it without a second approval, and the
// approval is used once.
func TestModern_RetryNotApprovedAgain(t *testing.T) {
	e := newEnv(t)
	rules := strings.Replace(ledgerRules, "[[rule]]\nserver = \"db\"\ntool = \"*\"", "[[rule]]\nserver = \"db\"\ntool = \"confirm\"\nclass = \"write\"\naction = \"ask\"\n\n[[rule]]\nserver = \"db\"\ntool = \"*\"", 1)
	cfg := e.config("[limits]\napproval_wait = \"20s\"\n", e.fake("db", confirmTools, "allow_elicitation = true"), rules)
	var elicited atomic.Int32
	h := e.connectModern(cfg, modernClient(&elicited, true))
	done := h.callAsync("db__confirm", map[string]any{"x": 1}, 40*time.Second)
	id, shown := e.pendingApproval(cfg)
	if out, code := e.mcpGuard("approve", id, "--config", cfg, "--shown", shown); code != 0 {
		t.Fatalf("approve (exit %d): %s", code, out)
	}
	r := <-done
	if r.err != nil || r.res.IsError || !strings.Contains(resultText(r.res), `"sure":true`) || elicited.Load() != 1 {
		t.Fatalf("approved call: %v %+v (host asked %d times)", r.err, r.res, elicited.Load())
	}
	as, err := e.openLedger().Approvals(context.Background(), "", 0, 10)
	if err != nil || len(as) != 1 || as[0].State != ledger.ApprovalUsed {
		t.Fatalf("approvals: %+v %v", as, err)
	}
	if calls := e.calls("db"); len(calls) != 1 {
		t.Fatalf("the upstream got %d calls", len(calls))
	}
}

// modernUp is a [[server]] block for testdata/modernup (go-sdk, speaking
// 2026-07-28), recording what it receives to <dir>/<name>.record.
func (e *env) modernUp(name, protocol string, extra ...string) string {
	return fmt.Sprintf("[[server]]\nname = %q\ncommand = [%q, \"--record\", %q]\nprotocol = %q\n%s\n",
		name, bins.modern, e.recordPath(name), protocol, strings.Join(extra, "\n"))
}

const modernUpRules = `
[[rule]]
server = "dep"
prompt = "*"
action = "allow"

[[rule]]
server = "dep"
tool = "drop"
class = "destructive"
action = "deny"
reason = "never"

[[rule]]
server = "dep"
tool = "*"
class = "read"
action = "allow"
`

// methodsSent is the methods of the requests the recorded upstream got.
func (e *env) methodsSent(name string) []string {
	var out []string
	for _, l := range e.record(name) {
		var m rpcMsg
		if json.Unmarshal([]byte(l), &m) == nil && m.Method != "" {
			out = append(out, m.Method)
		}
	}
	return out
}

// A 2026-07-28 server's tools are pinned from the bytes it lists: a
// restart finds the same pins (nothing changed, nothing withdrawn).
func TestModern_UpstreamModernPinsStable(t *testing.T) {
	e := newEnv(t)
	cfg := e.config(e.modernUp("dep", "2026-07-28"), modernUpRules)
	for i := range 2 {
		var elicited atomic.Int32
		h := e.connectClient(cfg, modernClient(&elicited, true))
		if names := h.toolNames(t); len(names) != 4 {
			t.Fatalf("start %d: tools %v", i, names)
		}
		h.Close()
	}
	evs, err := e.openLedger().Events(context.Background(), 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var added int
	for _, ev := range evs {
		switch ev.Kind {
		case "pin.added":
			added++
		case "pin.changed":
			t.Fatalf("a restart changed a pin: %+v", ev)
		}
	}
	if added != 6 { // four tools, a prompt and the instructions from server/discover
		t.Fatalf("pin.added events: %d, want 6", added)
	}
}

// allow_elicitation = "ask" with a stateless host: the server's request
// waits for the operator once; approved, it reaches the host as
// input_required, and the host's retry is not held again.
func TestModern_ElicitationAskApprovedOnce(t *testing.T) {
	e := newEnv(t)
	cfg := e.config("[limits]\napproval_wait = \"20s\"\n", e.fake("db", confirmTools, `allow_elicitation = "ask"`), ledgerRules)
	var elicited atomic.Int32
	h := e.connectModern(cfg, modernClient(&elicited, true))
	done := h.callAsync("db__confirm", map[string]any{"x": 1}, 40*time.Second)
	id, shown := e.pendingApproval(cfg)
	if n := elicited.Load(); n != 0 {
		t.Fatalf("the host was asked %d times before the operator approved", n)
	}
	if out, code := e.mcpGuard("approve", id, "--config", cfg, "--shown", shown); code != 0 {
		t.Fatalf("approve (exit %d): %s", code, out)
	}
	r := <-done
	if r.err != nil || r.res.IsError || !strings.Contains(resultText(r.res), `"sure":true`) || elicited.Load() != 1 {
		t.Fatalf("approved: %v %+v (host asked %d times)", r.err, r.res, elicited.Load())
	}
	as, err := e.openLedger().Approvals(context.Background(), "", 0, 10)
	if err != nil || len(as) != 1 || as[0].State != ledger.ApprovalUsed {
		t.Fatalf("approvals: %+v %v", as, err)
	}
	if calls := e.calls("db"); len(calls) != 1 {
		t.Fatalf("the upstream got %d calls", len(calls))
	}
}
