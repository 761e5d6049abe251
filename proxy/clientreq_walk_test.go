//lint:file-ignore SA1019 these walks are about the sampling requests mcp-guard relays, a feature SEP-2577 deprecates but keeps in the protocol for its window

package proxy

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-guard/mcp-guard/classify"
	"github.com/mcp-guard/mcp-guard/config"
	"github.com/mcp-guard/mcp-guard/gate"
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
