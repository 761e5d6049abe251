package main

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-guard/mcp-guard/ledger"
)

// J3 for what a server asks of the host: a sampling request whose params
// hold member names equal under case folding ("maxTokens" and
// "MaxTokens": the operator's display and the host's Go decoder would read
// different limits) is refused and recorded, and the host is never asked;
// the same request spelled once is relayed.
func TestClientRequests_CaseFoldedParamsRefused(t *testing.T) {
	var sampled, elicited atomic.Int32
	e := newEnv(t)
	script := `{"tools":[{"name":"folded","inputSchema":{"type":"object"}},{"name":"plain","inputSchema":{"type":"object"}}],
"calls":{"folded":{"do":"serverRequest","method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"maxTokens":5,"MaxTokens":100000}},
"plain":{"do":"serverRequest","method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"maxTokens":5}}}}`
	h := e.connectWithHandlers(e.config(e.fake("notes", script, `allow_sampling = "allow"`), allowAll), &sampled, &elicited)
	res, err := h.call(t, "notes__folded", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(resultText(res), "differ only in case") || sampled.Load() != 0 {
		t.Fatalf("the upstream got %q and the host sampled %d times; want a refusal naming the names, and none", resultText(res), sampled.Load())
	}
	rows, _ := e.openLedger().Calls(context.Background(), ledger.CallFilter{Limit: 100})
	found := false
	for _, r := range rows {
		if r.Tool == "sampling/createMessage" && r.Decision == "invalid" && r.Server == "notes" {
			found = true
		}
	}
	if !found {
		t.Fatalf("the refused sampling request is not in the ledger as invalid: %+v", rows)
	}
	res, err = h.call(t, "notes__plain", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(resultText(res), "sampled by the host") || sampled.Load() != 1 {
		t.Fatalf("the plain request: upstream got %q, host sampled %d times; want the host's answer, once", resultText(res), sampled.Load())
	}
}

// J3 for the host's answers: an elicitation answer whose content holds
// "name" and "NAME" is not relayed to the server (a Go server would read
// one of them, the ledger and the operator both); the server gets an error
// and the refusal is recorded. An answer spelled once is relayed.
func TestClientRequests_CaseFoldedAnswerRefused(t *testing.T) {
	e := newEnv(t)
	script := `{"tools":[{"name":"ask","inputSchema":{"type":"object"}}],
"calls":{"ask":{"do":"serverRequest","method":"elicitation/create","params":{"message":"Your name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}}}}}}}`
	var folded atomic.Bool
	folded.Store(true)
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-host", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			if folded.Load() {
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "ann", "NAME": "root"}}, nil
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "ann"}}, nil
		},
	})
	h := e.connectClient(e.config(e.fake("notes", script, `allow_elicitation = "allow"`), allowAll), client)
	res, err := h.call(t, "notes__ask", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	if txt := resultText(res); !strings.Contains(txt, "differ only in case") || strings.Contains(txt, "root") {
		t.Fatalf("the upstream got %q; want a refusal, never the answer", txt)
	}
	rows, _ := e.openLedger().Calls(context.Background(), ledger.CallFilter{Limit: 100})
	found := false
	for _, r := range rows {
		found = found || r.Tool == "elicitation/create" && r.Server == "notes"
	}
	if !found {
		t.Fatalf("no elicitation row: %+v", rows)
	}
	folded.Store(false)
	res, err = h.call(t, "notes__ask", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	if txt := resultText(res); !strings.Contains(txt, "ann") || strings.Contains(txt, "differ") {
		t.Fatalf("the answer spelled once: upstream got %q", txt)
	}
}
