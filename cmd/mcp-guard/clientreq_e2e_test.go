//lint:file-ignore SA1019 these tests are about the client requests mcp-guard relays (sampling) or keeps from upstreams (the host's roots), features SEP-2577 deprecates but keeps in the protocol for its window

package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-guard/mcp-guard/ledger"
)

// connectWithHandlers is e.connect with a host that answers sampling and
// elicitation and declares its own roots (which must never reach an
// upstream).
func (e *env) connectWithHandlers(cfg string, sampled, elicited *atomic.Int32, hostRoots ...string) *host {
	e.t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-host", Version: "1"}, &mcp.ClientOptions{
		CreateMessageHandler: func(_ context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			sampled.Add(1)
			return &mcp.CreateMessageResult{Model: "host-model", Role: "assistant", Content: &mcp.TextContent{Text: "sampled by the host"}}, nil
		},
		ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			elicited.Add(1)
			return &mcp.ElicitResult{Action: "decline"}, nil
		},
	})
	if len(hostRoots) == 0 {
		hostRoots = []string{"/host/secret/everything"}
	}
	for _, r := range hostRoots {
		client.AddRoots(&mcp.Root{URI: "file://" + r, Name: "the host's own root"})
	}
	return e.connectClient(cfg, client)
}

// connectClient starts serve on cfg and connects client to it as the host.
func (e *env) connectClient(cfg string, client *mcp.Client) *host {
	e.t.Helper()
	h := &host{stderr: &lockedBuffer{}}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := client.Connect(ctx, e.serveTransport(h.stderr, "serve", "--config", cfg), &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		e.t.Fatalf("connect: %v\n%s", err, h.stderr)
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

const everythingClientRules = `
[[rule]]
server = "every"
tool = "trigger-*-request"
class = "network"
action = "allow"

[[rule]]
server = "every"
tool = "get-roots-list"
class = "read"
action = "allow"

[[rule]]
server = "every"
tool = "echo"
class = "read"
action = "allow"
`

// server-everything asks its client for sampling, elicitation and roots only
// when the client offers them. By default mcp-guard offers none, whatever
// the host offers: the tools that would ask do not even appear. Allowed in
// the server's config, sampling and elicitation go to the host whose call
// caused them, recorded in the ledger; roots are exactly the configured
// list, never the host's.
func TestClientRequests_ServerEverything(t *testing.T) {
	t.Parallel()
	var sampled, elicited atomic.Int32
	e := newEnv(t)
	h := e.connectWithHandlers(e.config(npmServer(t, "every", everythingJS, "stdio"), everythingClientRules), &sampled, &elicited)
	if got := h.toolNames(t); !slices.Equal(got, []string{"every__echo"}) {
		t.Fatalf("by default the host sees %v; want only echo (no sampling, elicitation or roots offered upstream)", got)
	}
	h.Close()

	e = newEnv(t)
	work := t.TempDir()
	server := npmServer(t, "every", everythingJS, "stdio") + fmt.Sprintf("allow_sampling = true\nallow_elicitation = true\nroots = [%q]\n", work)
	cfg := e.config(server, everythingClientRules)
	h = e.connectWithHandlers(cfg, &sampled, &elicited)
	got := h.toolNames(t)
	slices.Sort(got)
	if want := []string{"every__echo", "every__get-roots-list", "every__trigger-elicitation-request", "every__trigger-sampling-request"}; !slices.Equal(got, want) {
		t.Fatalf("with access allowed the host sees %v, want %v", got, want)
	}
	res, err := h.call(t, "every__trigger-sampling-request", map[string]any{"prompt": "hello", "maxTokens": 10})
	if err != nil || res.IsError || !strings.Contains(resultText(res), "sampled by the host") || sampled.Load() != 1 {
		t.Fatalf("sampling through mcp-guard: %v %q (host sampled %d times)", err, resultText(res), sampled.Load())
	}
	res, err = h.call(t, "every__trigger-elicitation-request", map[string]any{})
	if err != nil || res.IsError || !strings.Contains(strings.ToLower(resultText(res)), "decline") || elicited.Load() != 1 {
		t.Fatalf("elicitation through mcp-guard: %v %q (host elicited %d times)", err, resultText(res), elicited.Load())
	}
	var roots string
	eventually(t, "server-everything to know its roots", func() bool {
		res, err := h.call(t, "every__get-roots-list", map[string]any{})
		roots = resultText(res)
		return err == nil && strings.Contains(roots, "file://"+work)
	})
	if strings.Contains(roots, "/host/secret") {
		t.Fatalf("the host's roots reached the upstream:\n%s", roots)
	}

	rows, err := e.openLedger().Calls(context.Background(), ledger.CallFilter{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]string{}
	for _, r := range rows {
		kinds[r.Tool] = r.Decision + " " + r.State
	}
	for _, m := range []string{"sampling/createMessage", "elicitation/create"} {
		if !strings.HasPrefix(kinds[m], "allow done") {
			t.Fatalf("ledger rows %v: want %s allowed and done", kinds, m)
		}
	}
}
