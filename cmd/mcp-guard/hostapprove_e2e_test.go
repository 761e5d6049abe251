package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
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

// Approvals in the host's own UI (A7): with [approvals] in_host, a held
// call is also put to the host as a form showing mcp-guard's presentation
// of the exact call. The host's approve runs it once, its deny refuses it;
// each decision's event says the host made it. A host that never answers
// leaves the terminal to decide; an answer that is not one of the choices
// offered is refused; a call too long to show whole can only be denied
// there; exec calls and rules with ask_in = "terminal" are not put to the
// host; a host without elicitation is never asked.
func TestHostApprovals(t *testing.T) {
	e := newEnv(t)
	cfg := e.config("[limits]\napproval_wait = \"4s\"\n", e.fake("db", hostApproveTools), hostApproveRules)
	f := &formHost{}
	f.set(choose("approve"))
	h := e.connectClient(cfg, f.client())
	led := e.openLedger()

	// Approved in the host: it runs once.
	res, err := h.call(t, "db__mv", map[string]any{"from": "a", "to": "b"})
	if err != nil || res.IsError {
		t.Fatalf("mv approved in the host: %v %s", err, resultText(res))
	}
	if n := len(e.calls("db")); n != 1 {
		t.Fatalf("the upstream got %d calls, want 1", n)
	}
	forms := f.shown()
	if len(forms) != 1 {
		t.Fatalf("the host was shown %d forms", len(forms))
	}
	msg := forms[0].Message
	for _, want := range []string{"mcp-guard holds this call until you decide (approval 1)", "server    db", "tool      mv", `"from": "a"`, `"to": "b"`, "Approve runs it once"} {
		if !strings.Contains(msg, want) {
			t.Fatalf("the form does not show %q:\n%s", want, msg)
		}
	}
	if evs := approvalEvents(t, led); len(evs) != 1 || evs[0]["kind"] != "approval.approved" || evs[0]["by"] != "host" {
		t.Fatalf("approval events: %v", evs)
	}
	if out, code := e.mcpGuard("approvals", "--config", cfg, "--state", "", "--json"); code != 0 || !strings.Contains(out, `"reason":"approved in the host"`) {
		t.Fatalf("approvals --json (exit %d) does not say the host approved:\n%s", code, out)
	}

	// Denied in the host: refused, nothing forwarded.
	f.set(choose("deny"))
	res, err = h.call(t, "db__mv", map[string]any{"from": "c"})
	if err != nil || !res.IsError || !strings.Contains(resultText(res), "denied") {
		t.Fatalf("mv denied in the host: %v %s", err, resultText(res))
	}
	if n := len(e.calls("db")); n != 1 {
		t.Fatalf("a call denied in the host reached the upstream (%d calls)", n)
	}
	if evs := approvalEvents(t, led); len(evs) != 2 || evs[1]["kind"] != "approval.denied" || evs[1]["by"] != "host" {
		t.Fatalf("approval events: %v", evs)
	}

	// An answer that is not one of the choices is refused: the call waits
	// on, and the wait ends with nothing made.
	bads := []map[string]any{{"decision": "yes"}, {"decision": "approve", "also": "x"}, {"decision": true}}
	f.set(func(_ context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		for i, bad := range bads {
			if strings.Contains(p.Message, fmt.Sprintf(`"bad": %d`, i)) {
				return &mcp.ElicitResult{Action: "accept", Content: bad}, nil
			}
		}
		return nil, errors.New("a form for no bad answer")
	})
	var waits []<-chan callResult // at once: each waits out approval_wait
	for i := range bads {
		waits = append(waits, h.callAsync("db__mv", map[string]any{"bad": i}, 20*time.Second))
	}
	for i, ch := range waits {
		if r := <-ch; r.err != nil || !r.res.IsError || !strings.Contains(resultText(r.res), "waited") {
			t.Fatalf("mv with the host's answer %v: %v %s", bads[i], r.err, resultText(r.res))
		}
	}
	if n := len(e.calls("db")); n != 1 {
		t.Fatalf("a call the host answered wrongly reached the upstream (%d calls)", n)
	}

	// A host that never answers: the terminal approves, and the call runs.
	// The host's form is withdrawn as soon as the wait ends, not when the
	// slow upstream answers.
	withdrawn := make(chan struct{})
	f.set(func(ctx context.Context, _ *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		<-ctx.Done() // the host's SDK ends it on mcp-guard's notifications/cancelled
		close(withdrawn)
		return nil, ctx.Err()
	})
	ch := h.callAsync("db__slow", map[string]any{"from": "terminal"}, 30*time.Second)
	id, shown := e.pendingApproval(cfg)
	if out, code := e.mcpGuard("approve", id, "--config", cfg, "--shown", shown); code != 0 {
		t.Fatalf("approve in the terminal (exit %d): %s", code, out)
	}
	select {
	case <-withdrawn:
	case r := <-ch:
		t.Fatalf("the call ended (%v %s) with the host's form still open", r.err, resultText(r.res))
	}
	if r := <-ch; r.err != nil || r.res.IsError {
		t.Fatalf("slow approved in the terminal while the host's form was open: %v %s", r.err, resultText(r.res))
	}
	if n := len(e.calls("db")); n != 2 {
		t.Fatalf("the upstream got %d calls, want 2", n)
	}
	if evs := approvalEvents(t, led); evs[len(evs)-1]["by"] != nil {
		t.Fatalf("the terminal's decision is recorded as %v", evs[len(evs)-1])
	}

	// Too long to show whole: the form offers deny alone, and an approve
	// from the host is refused.
	before := len(f.shown())
	f.set(choose("approve"))
	res, err = h.call(t, "db__mv", map[string]any{"blob": strings.Repeat("x\n", 400)})
	if err != nil || !res.IsError || !strings.Contains(resultText(res), "waited") {
		t.Fatalf("a long mv approved in the host: %v %s", err, resultText(res))
	}
	forms = f.shown()
	if len(forms) != before+1 || !strings.Contains(forms[before].Message, "cannot be approved here") {
		t.Fatalf("the long call's form: %+v", forms[len(forms)-1])
	}
	if enum := forms[before].RequestedSchema.(map[string]any)["properties"].(map[string]any)["decision"].(map[string]any)["enum"]; len(enum.([]any)) != 1 {
		t.Fatalf("the long call's form offers %v", enum)
	}

	// Not put to the host: an exec call (host_may_approve does not name
	// exec), and a rule that says ask_in = "terminal".
	before = len(f.shown())
	waits = nil
	for _, tool := range []string{"db__run", "db__quiet"} {
		waits = append(waits, h.callAsync(tool, map[string]any{}, 20*time.Second))
	}
	for i, ch := range waits {
		if r := <-ch; r.err != nil || !r.res.IsError || !strings.Contains(resultText(r.res), "waited") {
			t.Fatalf("call %d: %v %s", i, r.err, resultText(r.res))
		}
	}
	if n := len(f.shown()); n != before {
		t.Fatalf("the host was asked about an exec call or a terminal-only rule (%d forms)", n-before)
	}
	if n := len(e.calls("db")); n != 2 {
		t.Fatalf("the upstream got %d calls, want 2", n)
	}

	// A host without elicitation is never asked; the terminal decides.
	plain := e.connect(cfg, "")
	ch = plain.callAsync("db__mv", map[string]any{"from": "plain"}, 20*time.Second)
	id, shown = e.pendingApproval(cfg)
	if out, code := e.mcpGuard("approve", id, "--config", cfg, "--shown", shown); code != 0 {
		t.Fatalf("approve in the terminal (exit %d): %s", code, out)
	}
	if r := <-ch; r.err != nil || r.res.IsError {
		t.Fatalf("mv of a host without elicitation: %v %s", r.err, resultText(r.res))
	}
}

// A 2026-07-28 host is asked in the call's answer (input_required); its
// retry with the form's answer approves the call, which runs once.
func TestHostApprovals_ModernHost(t *testing.T) {
	e := newEnv(t)
	cfg := e.config("[limits]\napproval_wait = \"4s\"\n", e.fake("db", hostApproveTools), hostApproveRules)
	f := &formHost{}
	f.set(choose("approve"))
	h := e.connectModern(cfg, f.client())
	res, err := h.call(t, "db__mv", map[string]any{"from": "modern"})
	if err != nil || res.IsError {
		t.Fatalf("mv approved by a modern host: %v %s", err, resultText(res))
	}
	if len(f.shown()) != 1 || len(e.calls("db")) != 1 {
		t.Fatalf("forms %d, upstream calls %d", len(f.shown()), len(e.calls("db")))
	}
	if evs := approvalEvents(t, e.openLedger()); len(evs) != 1 || evs[0]["by"] != "host" {
		t.Fatalf("approval events: %v", evs)
	}

	// A rule with ask_in = "host" is put to the host.
	res, err = h.call(t, "db__hostonly", map[string]any{})
	if err != nil || res.IsError || len(f.shown()) != 2 || len(e.calls("db")) != 2 {
		t.Fatalf("hostonly approved by a modern host: %v %s; forms %d, upstream calls %d", err, resultText(res), len(f.shown()), len(e.calls("db")))
	}

	// A modern host without elicitation is not asked (no input_required it
	// cannot answer): the terminal decides.
	plain := e.connectModern(cfg, mcp.NewClient(&mcp.Implementation{Name: "plain", Version: "1"}, nil))
	ch := plain.callAsync("db__mv", map[string]any{"from": "plain"}, 20*time.Second)
	id, shown := e.pendingApproval(cfg)
	if out, code := e.mcpGuard("approve", id, "--config", cfg, "--shown", shown); code != 0 {
		t.Fatalf("approve in the terminal (exit %d): %s", code, out)
	}
	if r := <-ch; r.err != nil || r.res.IsError {
		t.Fatalf("mv of a modern host without elicitation: %v %s", r.err, resultText(r.res))
	}
	if len(e.calls("db")) != 3 {
		t.Fatalf("upstream calls %d, want 3", len(e.calls("db")))
	}
}

// An HTTP host is asked on its call's own stream: it approves one call,
// which runs once; a form it leaves open while the terminal decides is
// withdrawn. [export] is on (to a collector that is not there): the
// exporting ledger records the host's decision too.
func TestHostApprovals_HTTPHost(t *testing.T) {
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
