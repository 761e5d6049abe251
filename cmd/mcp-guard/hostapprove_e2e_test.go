package main

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-guard/mcp-guard/ledger"
)

const hostApproveTools = `{"tools":[
{"name":"mv","inputSchema":{"type":"object"}},
{"name":"run","inputSchema":{"type":"object"}},
{"name":"quiet","inputSchema":{"type":"object"}},
{"name":"slow","inputSchema":{"type":"object"}},
{"name":"hostonly","inputSchema":{"type":"object"}}],
"calls":{"slow":{"do":"echo","delayMs":6000}}}`

const hostApproveRules = `
[approvals]
in_host = true

[[rule]]
server = "db"
tool = "mv"
class = "write"
action = "ask"

[[rule]]
server = "db"
tool = "run"
class = "exec"
action = "ask"

[[rule]]
server = "db"
tool = "quiet"
class = "write"
action = "ask"
ask_in = "terminal"

[[rule]]
server = "db"
tool = "slow"
class = "write"
action = "ask"

[[rule]]
server = "db"
tool = "hostonly"
class = "write"
action = "ask"
ask_in = "host"
`

// formHost is a go-sdk host whose elicitation handler answers each form
// as answer says, recording the forms it was shown.
type formHost struct {
	mu     sync.Mutex
	forms  []*mcp.ElicitParams
	answer func(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error)
}

func (f *formHost) client() *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: "form-host", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			f.mu.Lock()
			f.forms = append(f.forms, r.Params)
			answer := f.answer
			f.mu.Unlock()
			return answer(ctx, r.Params)
		},
	})
}

func (f *formHost) shown() []*mcp.ElicitParams {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*mcp.ElicitParams(nil), f.forms...)
}

func (f *formHost) set(answer func(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error)) {
	f.mu.Lock()
	f.answer = answer
	f.mu.Unlock()
}

func choose(decision string) func(context.Context, *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	return func(context.Context, *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"decision": decision}}, nil
	}
}

// approvalEvents are the approval.approved and approval.denied events'
// bodies, in order.
func approvalEvents(t *testing.T, led *ledger.Ledger) []map[string]any {
	t.Helper()
	var out []map[string]any
	evs, err := led.Events(context.Background(), 0, 10000)
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range evs {
		if ev.Kind == "approval.approved" || ev.Kind == "approval.denied" {
			var b map[string]any
			if err := json.Unmarshal(ev.Body, &b); err != nil {
				t.Fatal(err)
			}
			b["kind"] = ev.Kind
			out = append(out, b)
		}
	}
	return out
}

// An HTTP host is asked on its call's own stream: it approves one call,
// which runs once; a form it leaves open while the terminal decides is
// withdrawn. [export] is on (to a collector that is not there): the
// exporting ledger records the host's decision too.
func TestHostApprovals_HTTPHost(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := e.config("[limits]\napproval_wait = \"4s\"\n\n[export]\notlp = \"http://127.0.0.1:9\"\n", e.fake("db", hostApproveTools), hostApproveRules)
	endpoint, _ := e.httpServe(cfg, "--http", "127.0.0.1:0")
	f := &formHost{}
	f.set(choose("approve"))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := f.client().Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connect over HTTP: %v", err)
	}
	defer s.Close()
	h := &host{ClientSession: s, stderr: &lockedBuffer{}}
	res, err := h.call(t, "db__mv", map[string]any{"from": "http"})
	if err != nil || res.IsError {
		t.Fatalf("mv approved by an HTTP host: %v %s", err, resultText(res))
	}
	if len(f.shown()) != 1 || len(e.calls("db")) != 1 {
		t.Fatalf("forms %d, upstream calls %d", len(f.shown()), len(e.calls("db")))
	}

	withdrawn := make(chan struct{})
	f.set(func(ctx context.Context, _ *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		<-ctx.Done()
		close(withdrawn)
		return nil, ctx.Err()
	})
	ch := h.callAsync("db__mv", map[string]any{"from": "terminal"}, 20*time.Second)
	id, shown := e.pendingApproval(cfg)
	if out, code := e.mcpGuard("approve", id, "--config", cfg, "--shown", shown); code != 0 {
		t.Fatalf("approve in the terminal (exit %d): %s", code, out)
	}
	if r := <-ch; r.err != nil || r.res.IsError {
		t.Fatalf("mv approved in the terminal: %v %s", r.err, resultText(r.res))
	}
	select {
	case <-withdrawn:
	case <-time.After(10 * time.Second):
		t.Fatal("the HTTP host's form stayed open after the terminal decided")
	}
	if evs := approvalEvents(t, e.openLedger()); len(evs) != 2 || evs[0]["by"] != "host" || evs[1]["by"] != nil {
		t.Fatalf("approval events: %v", evs)
	}
}
