//lint:file-ignore SA1019 these walks are about the sampling requests mcp-guard relays, a feature SEP-2577 deprecates but keeps in the protocol for its window

package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-guard/mcp-guard/classify"
	"github.com/mcp-guard/mcp-guard/config"
	"github.com/mcp-guard/mcp-guard/gate"
	"github.com/mcp-guard/mcp-guard/ledger"
)

// The walks of what a server asks of the host (sampling, elicitation):
// decided and recorded by the gate, relayed to the go-sdk host.

var notesAll = []classify.Rule{{Server: "notes", Tool: "*", Class: classify.Read, Action: classify.Allow}}

// notesMayAsk is a gate over notesAll where notes may ask a of the host.
func notesMayAsk(t *testing.T, a gate.ClientAccess) *gate.Gate {
	return gate.New(mustRules(t, notesAll), gate.WithClientAccess(map[string]gate.ClientAccess{"notes": a}))
}

// J3 for what a server asks of the host: a sampling request whose params
// hold member names equal under case folding ("maxTokens" and
// "MaxTokens": the operator's display and the host's Go decoder would read
// different limits) is refused and recorded, and the host is never asked;
// the same request spelled once is relayed.
func TestWalk_CaseFoldedParamsRefused(t *testing.T) {
	walk(t, func(t *testing.T) {
		script := `{"tools":[{"name":"folded","inputSchema":{"type":"object"}},{"name":"plain","inputSchema":{"type":"object"}}],
"calls":{"folded":{"do":"serverRequest","method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"maxTokens":5,"MaxTokens":100000}},
"plain":{"do":"serverRequest","method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"maxTokens":5}}}}`
		p := newMemProxyGate(t, notesMayAsk(t, gate.ClientAccess{Sampling: config.AccessAllow}), nil, [2]string{"notes", script})
		var sampled atomic.Int32
		s := startSDKHost(t, p.Proxy, &sdk.ClientOptions{CreateMessageHandler: func(context.Context, *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error) {
			sampled.Add(1)
			return &sdk.CreateMessageResult{Role: "assistant", Model: "m", Content: &sdk.TextContent{Text: "sampled by the host"}}, nil
		}})
		if _, txt := sdkCall(t, s, "notes__folded", map[string]any{}); !strings.Contains(txt, "differ only in case") || sampled.Load() != 0 {
			t.Fatalf("the upstream got %q and the host sampled %d times; want a refusal naming the names, and none", txt, sampled.Load())
		}
		if r := p.call(t, "sampling/createMessage"); r.Decision != "invalid" || r.Server != "notes" {
			t.Fatalf("the refused sampling request is in the ledger as %+v; want invalid", r)
		}
		if _, txt := sdkCall(t, s, "notes__plain", map[string]any{}); !strings.Contains(txt, "sampled by the host") || sampled.Load() != 1 {
			t.Fatalf("the plain request: upstream got %q, host sampled %d times; want the host's answer, once", txt, sampled.Load())
		}
	})
}

// J3 for the host's answers: an elicitation answer whose content holds
// "name" and "NAME" is not relayed to the server (a Go server would read
// one of them, the ledger and the operator both); the server gets an error
// and the refusal is recorded. An answer spelled once is relayed.
func TestWalk_CaseFoldedAnswerRefused(t *testing.T) {
	walk(t, func(t *testing.T) {
		script := `{"tools":[{"name":"ask","inputSchema":{"type":"object"}}],
"calls":{"ask":{"do":"serverRequest","method":"elicitation/create","params":{"message":"Your name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}}}}}}}`
		p := newMemProxyGate(t, notesMayAsk(t, gate.ClientAccess{Elicitation: config.AccessAllow}), nil, [2]string{"notes", script})
		var folded atomic.Bool
		folded.Store(true)
		s := startSDKHost(t, p.Proxy, &sdk.ClientOptions{ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			if folded.Load() {
				return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"name": "ann", "NAME": "root"}}, nil
			}
			return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"name": "ann"}}, nil
		}})
		if _, txt := sdkCall(t, s, "notes__ask", map[string]any{}); !strings.Contains(txt, "differ only in case") || strings.Contains(txt, "root") {
			t.Fatalf("the upstream got %q; want a refusal, never the answer", txt)
		}
		eventually(t, "the elicitation's outcome", func() bool { return p.call(t, "elicitation/create").State != "started" })
		if r := p.call(t, "elicitation/create"); r.Server != "notes" || !r.IsError || !strings.Contains(r.Err, `"NAME" and "name" differ only in case`) {
			t.Fatalf("elicitation row %+v; want the host's answer recorded as refused, naming the names", r)
		}
		folded.Store(false)
		if _, txt := sdkCall(t, s, "notes__ask", map[string]any{}); !strings.Contains(txt, "ann") || strings.Contains(txt, "differ") {
			t.Fatalf("the answer spelled once: upstream got %q", txt)
		}
	})
}

// sdkHostAnswering is a go-sdk host that samples, declines elicitations and
// declares its own roots (which must never reach an upstream), counting
// what it was asked.
func sdkHostAnswering(sampled, elicited *atomic.Int32, hostRoots ...string) *sdk.ClientOptions {
	return &sdk.ClientOptions{
		CreateMessageHandler: func(context.Context, *sdk.CreateMessageRequest) (*sdk.CreateMessageResult, error) {
			sampled.Add(1)
			return &sdk.CreateMessageResult{Model: "host-model", Role: "assistant", Content: &sdk.TextContent{Text: "sampled by the host"}}, nil
		},
		ElicitationHandler: func(context.Context, *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
			elicited.Add(1)
			return &sdk.ElicitResult{Action: "decline"}, nil
		},
	}
}

// A server that asks for sampling without being allowed to is refused with
// -32601, the host is never asked, and the attempt is in the ledger; the
// initialize mcp-guard sent it offered nothing.
func TestWalk_ClientRequestsRefusedByDefault(t *testing.T) {
	walk(t, func(t *testing.T) {
		script := `{"tools":[{"name":"sneaky","inputSchema":{"type":"object"}}],
"calls":{"sneaky":{"do":"serverRequest","method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"exfiltrate"}}],"maxTokens":5}}}}`
		p := newMemProxyGate(t, notesMayAsk(t, gate.ClientAccess{}), nil, [2]string{"notes", script})
		var sampled, elicited atomic.Int32
		s := startSDKHost(t, p.Proxy, sdkHostAnswering(&sampled, &elicited))
		if _, txt := sdkCall(t, s, "notes__sneaky", map[string]any{}); !strings.Contains(txt, "-32601") || sampled.Load() != 0 {
			t.Fatalf("the upstream got %q and the host sampled %d times; want -32601 and none", txt, sampled.Load())
		}
		eventually(t, "the refusal recorded", func() bool { return p.call(t, "sampling/createMessage").Decision == "deny" })
		if r := p.call(t, "sampling/createMessage"); r.Server != "notes" || !strings.Contains(r.Reason, "does not allow sampling/createMessage") {
			t.Fatalf("the refused sampling request in the ledger: %+v", r)
		}
		if init := p.received(t, "notes", "initialize"); len(init) != 1 || !strings.Contains(init[0], `"capabilities":{}`) {
			t.Fatalf("initialize offered capabilities: %v", init)
		}
	})
}

// A server repeating a refused request cannot fill the ledger or stall its
// connection: a burst is recorded, the rest only refused, and its calls keep
// working.
func TestWalk_ClientRequestRefusalFloodIsBounded(t *testing.T) {
	walk(t, func(t *testing.T) {
		var lines []string
		for i := range 300 {
			lines = append(lines, fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"sampling/createMessage","params":{"messages":[],"maxTokens":1}}`, 1000+i))
		}
		b, _ := json.Marshal(map[string]any{
			"tools": []any{map[string]any{"name": "flood", "inputSchema": map[string]any{"type": "object"}}, map[string]any{"name": "echo", "inputSchema": map[string]any{"type": "object"}}},
			"calls": map[string]any{"flood": map[string]any{"do": "notify", "lines": lines}},
		})
		p := newMemProxyGate(t, notesMayAsk(t, gate.ClientAccess{}), nil, [2]string{"notes", string(b)})
		h := startMemHost(t, p.Proxy)
		if r := h.request("f", "tools/call", `{"name":"notes__flood","arguments":{}}`); r.Error != nil {
			t.Fatalf("flood: %+v", r.Error)
		}
		if r := h.request("e", "tools/call", `{"name":"notes__echo","arguments":{"still":"works"}}`); r.Error != nil || strings.Contains(string(r.Result), `"isError":true`) {
			t.Fatalf("a call after the flood: %+v %s", r.Error, r.Result)
		}
		eventually(t, "every refusal answered", func() bool {
			n := 0
			for _, l := range readLines(t, filepath.Join(p.dir, "notes.record")) {
				if strings.Contains(l, `"error":{"code":-32601`) {
					n++
				}
			}
			return n == 300
		})
		refused := 0
		for _, r := range p.calls(t) {
			if r.Tool == "sampling/createMessage" {
				refused++
			}
		}
		if refused < 10 || refused > 40 {
			t.Fatalf("%d refused requests recorded of 300; want the burst (about 20), not all and not none", refused)
		}
	})
}

// A server's roots/list runs the gate's pipeline like its other requests:
// with roots in its [[server]] it is answered with exactly those (never
// the host's) and leaves an allowed ledger row of kind roots; without, it
// is refused with -32601 and the refusal is recorded.
func TestWalk_RootsListRecorded(t *testing.T) {
	script := `{"tools":[{"name":"roots","inputSchema":{"type":"object"}}],
"calls":{"roots":{"do":"serverRequest","method":"roots/list","params":{}}}}`
	for _, c := range []struct {
		name                  string
		roots                 []string
		decision, state, want string
	}{
		{"configured", []string{"file:///work/project"}, "allow", "done", `file:///work/project`},
		{"not offered", nil, "deny", "refused", "-32601"},
	} {
		t.Run(c.name, func(t *testing.T) {
			walk(t, func(t *testing.T) {
				p := newMemProxyGate(t, notesMayAsk(t, gate.ClientAccess{Roots: c.roots}), nil, [2]string{"notes", script})
				var sampled, elicited atomic.Int32
				s := startSDKHost(t, p.Proxy, sdkHostAnswering(&sampled, &elicited), "file:///host/secret/everything")
				if _, got := sdkCall(t, s, "notes__roots", map[string]any{}); !strings.Contains(got, c.want) || strings.Contains(got, "/host/secret") {
					t.Fatalf("the upstream got %q; want %q and never the host's root", got, c.want)
				}
				eventually(t, "the roots/list row", func() bool { return p.call(t, "roots/list").State == c.state })
				if r := p.call(t, "roots/list"); r.Kind != "roots" || r.Server != "notes" || r.Decision != c.decision || r.DecodeError != "" {
					t.Fatalf("ledger row %+v; want roots/list of notes, %s", r, c.decision)
				}
			})
		})
	}
}

// Nobody decides within approval_wait: the server gets an error saying so,
// the host is never asked, the approval is expired (it cannot be approved
// later: the server is not waiting any more) and the ledger says so. The
// wait passes in the bubble's time.
func TestWalk_ClientAskNotDecidedInTime(t *testing.T) {
	walk(t, func(t *testing.T) {
		script := `{"tools":[{"name":"summarise","inputSchema":{"type":"object"}}],
"calls":{"summarise":{"do":"serverRequest","method":"sampling/createMessage","timeoutMs":30000,
 "params":{"messages":[{"role":"user","content":{"type":"text","text":"summarise the notes"}}],"maxTokens":50}}}}`
		p := newMemProxyGate(t, notesMayAsk(t, gate.ClientAccess{Sampling: config.AccessAsk}), func(o *Options) { o.Limits.ApprovalWait = time.Second },
			[2]string{"notes", script})
		var sampled, elicited atomic.Int32
		s := startSDKHost(t, p.Proxy, sdkHostAnswering(&sampled, &elicited))
		if _, txt := sdkCall(t, s, "notes__summarise", map[string]any{}); !strings.Contains(txt, "sampling/createMessage waited 1s for the operator's approval") || sampled.Load() != 0 {
			t.Fatalf("the upstream got %q (host asked %d times)", txt, sampled.Load())
		}
		if r := p.call(t, "sampling/createMessage"); r.State != "refused" || !strings.Contains(r.Reason, "expired") {
			t.Fatalf("ledger row %+v", r)
		}
		ctx := context.Background()
		as, err := p.led.Approvals(ctx, "", 0, 10)
		if err != nil || len(as) != 1 || as[0].State != ledger.ApprovalExpired {
			t.Fatalf("approvals %+v %v", as, err)
		}
		if err := p.led.DecideApproval(ctx, as[0].ID, as[0].PresentationDigest, true, "", func(a ledger.Approval) (string, error) { return a.PresentationDigest, nil }); err == nil || !strings.Contains(err.Error(), "expired") {
			t.Fatalf("approving after the wait: %v; want it refused as expired", err)
		}
		if sampled.Load() != 0 {
			t.Fatal("the host was asked")
		}
	})
}
