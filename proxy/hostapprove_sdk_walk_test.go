package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Approvals in the host's own UI (A7), as serve runs them from the config:
// [approvals] in_host, a rule per case.

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

// hostApproveProxy is a proxy over db (hostApproveTools) as serve runs it
// from hostApproveRules, with a 4s approval wait.
func hostApproveProxy(t *testing.T) *memProxy {
	t.Helper()
	cfg := tomlConfig(t, hostApproveRules, "db")
	return newMemProxyWith(t, cfg.CompiledRules(), func(o *Options) {
		o.Limits.ApprovalWait = 4 * time.Second
		o.AskIn = cfg.AskIn
	}, [2]string{"db", hostApproveTools})
}

// formHost is a go-sdk host's elicitation handler that answers each form
// as answer says, recording the forms it was shown.
type formHost struct {
	mu     sync.Mutex
	forms  []*sdk.ElicitParams
	answer func(ctx context.Context, p *sdk.ElicitParams) (*sdk.ElicitResult, error)
}

func (f *formHost) opts() *sdk.ClientOptions {
	return &sdk.ClientOptions{ElicitationHandler: func(ctx context.Context, r *sdk.ElicitRequest) (*sdk.ElicitResult, error) {
		f.mu.Lock()
		f.forms = append(f.forms, r.Params)
		answer := f.answer
		f.mu.Unlock()
		return answer(ctx, r.Params)
	}}
}

func (f *formHost) shown() []*sdk.ElicitParams {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*sdk.ElicitParams(nil), f.forms...)
}

func (f *formHost) set(answer func(ctx context.Context, p *sdk.ElicitParams) (*sdk.ElicitResult, error)) {
	f.mu.Lock()
	f.answer = answer
	f.mu.Unlock()
}

func choose(decision string) func(context.Context, *sdk.ElicitParams) (*sdk.ElicitResult, error) {
	return func(context.Context, *sdk.ElicitParams) (*sdk.ElicitResult, error) {
		return &sdk.ElicitResult{Action: "accept", Content: map[string]any{"decision": decision}}, nil
	}
}

// approvalEvents are the ledger's approval.approved and approval.denied
// events' bodies, in order, each with its kind.
func (m *memProxy) approvalEvents(t *testing.T) []map[string]any {
	t.Helper()
	evs, err := m.led.Events(context.Background(), 0, 10000)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
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

// With [approvals] in_host, a held call is also put to the host as a form
// showing mcp-guard's presentation of the exact call. The host's approve
// runs it once, its deny refuses it; each decision's event says the host
// made it. An answer that is not one of the choices offered is refused. A
// host that never answers leaves the terminal to decide, and its form is
// withdrawn as soon as the wait ends. A call too long to show whole can
// only be denied there; exec calls and rules with ask_in = "terminal" are
// not put to the host; a host without elicitation is never asked.
func TestWalk_HostApprovals(t *testing.T) {
	walk(t, func(t *testing.T) {
		p := hostApproveProxy(t)
		f := &formHost{}
		f.set(choose("approve"))
		s := startSDKHost(t, p.Proxy, f.opts())
		upstream := func() int { return len(p.received(t, "db", "tools/call")) }

		// Approved in the host: it runs once.
		if res, err := callTool(s, "db__mv", map[string]any{"from": "a", "to": "b"}); err != nil || res.IsError {
			t.Fatalf("mv approved in the host: %v %+v", err, res)
		}
		if n := upstream(); n != 1 {
			t.Fatalf("the upstream got %d calls, want 1", n)
		}
		forms := f.shown()
		if len(forms) != 1 {
			t.Fatalf("the host was shown %d forms", len(forms))
		}
		for _, want := range []string{"mcp-guard holds this call until you decide (approval 1)", "server    db", "tool      mv", `"from": "a"`, `"to": "b"`, "Approve runs it once"} {
			if !strings.Contains(forms[0].Message, want) {
				t.Fatalf("the form does not show %q:\n%s", want, forms[0].Message)
			}
		}
		if evs := p.approvalEvents(t); len(evs) != 1 || evs[0]["kind"] != "approval.approved" || evs[0]["by"] != "host" {
			t.Fatalf("approval events: %v", evs)
		}
		if as := p.approvals(t, ""); len(as) != 1 || !strings.Contains(as[0].Reason, "approved in the host") {
			t.Fatalf("the approval does not say the host approved it: %+v", as)
		}

		// Denied in the host: refused, nothing forwarded.
		f.set(choose("deny"))
		if res, err := callTool(s, "db__mv", map[string]any{"from": "c"}); err != nil || !res.IsError || !strings.Contains(textOf(res), "denied") {
			t.Fatalf("mv denied in the host: %v %+v", err, res)
		}
		if n := upstream(); n != 1 {
			t.Fatalf("a call denied in the host reached the upstream (%d calls)", n)
		}
		if evs := p.approvalEvents(t); len(evs) != 2 || evs[1]["kind"] != "approval.denied" || evs[1]["by"] != "host" {
			t.Fatalf("approval events: %v", evs)
		}

		// An answer that is not one of the choices is refused: the call
		// waits on, and the wait ends with nothing made.
		bads := []map[string]any{{"decision": "yes"}, {"decision": "approve", "also": "x"}, {"decision": true}}
		f.set(func(_ context.Context, p *sdk.ElicitParams) (*sdk.ElicitResult, error) {
			for i, bad := range bads {
				if strings.Contains(p.Message, fmt.Sprintf(`"bad": %d`, i)) {
					return &sdk.ElicitResult{Action: "accept", Content: bad}, nil
				}
			}
			return nil, errors.New("a form for no bad answer")
		})
		var waits []<-chan sdkResult
		for i := range bads {
			waits = append(waits, callAsync(s, "db__mv", map[string]any{"bad": i}))
		}
		for i, ch := range waits {
			if r := <-ch; r.err != nil || !r.res.IsError || !strings.Contains(textOf(r.res), "waited") {
				t.Fatalf("mv with the host's answer %v: %v %+v", bads[i], r.err, r.res)
			}
		}
		if n := upstream(); n != 1 {
			t.Fatalf("a call the host answered wrongly reached the upstream (%d calls)", n)
		}

		// A host that never answers: the terminal approves, and the call
		// runs. The host's form is withdrawn as soon as the wait ends, not
		// when the slow upstream answers.
		withdrawn := make(chan struct{})
		f.set(func(ctx context.Context, _ *sdk.ElicitParams) (*sdk.ElicitResult, error) {
			<-ctx.Done() // the host's SDK ends it on mcp-guard's notifications/cancelled
			close(withdrawn)
			return nil, ctx.Err()
		})
		ch := callAsync(s, "db__slow", map[string]any{"from": "terminal"})
		p.approvePending(t, "slow")
		select {
		case <-withdrawn:
		case r := <-ch:
			t.Fatalf("the call ended (%v %+v) with the host's form still open", r.err, r.res)
		}
		if r := <-ch; r.err != nil || r.res.IsError {
			t.Fatalf("slow approved in the terminal while the host's form was open: %v %+v", r.err, r.res)
		}
		if n := upstream(); n != 2 {
			t.Fatalf("the upstream got %d calls, want 2", n)
		}
		if evs := p.approvalEvents(t); evs[len(evs)-1]["by"] == "host" {
			t.Fatalf("the terminal's decision is recorded as %v", evs[len(evs)-1])
		}

		// Too long to show whole: the form offers deny alone, and an
		// approve from the host is refused.
		before := len(f.shown())
		f.set(choose("approve"))
		if res, err := callTool(s, "db__mv", map[string]any{"blob": strings.Repeat("x\n", 400)}); err != nil || !res.IsError || !strings.Contains(textOf(res), "waited") {
			t.Fatalf("a long mv approved in the host: %v %+v", err, res)
		}
		forms = f.shown()
		if len(forms) != before+1 || !strings.Contains(forms[before].Message, "cannot be approved here") {
			t.Fatalf("the long call's form: %+v", forms[len(forms)-1])
		}
		if enum := forms[before].RequestedSchema.(map[string]any)["properties"].(map[string]any)["decision"].(map[string]any)["enum"]; len(enum.([]any)) != 1 {
			t.Fatalf("the long call's form offers %v", enum)
		}

		// Not put to the host: an exec call (host_may_approve does not
		// name exec), and a rule that says ask_in = "terminal".
		before = len(f.shown())
		waits = nil
		for _, tool := range []string{"db__run", "db__quiet"} {
			waits = append(waits, callAsync(s, tool, map[string]any{}))
		}
		for i, ch := range waits {
			if r := <-ch; r.err != nil || !r.res.IsError || !strings.Contains(textOf(r.res), "waited") {
				t.Fatalf("call %d: %v %+v", i, r.err, r.res)
			}
		}
		if n := len(f.shown()); n != before {
			t.Fatalf("the host was asked about an exec call or a terminal-only rule (%d forms)", n-before)
		}
		if n := upstream(); n != 2 {
			t.Fatalf("the upstream got %d calls, want 2", n)
		}
	})
}

// A host without elicitation is never asked, whatever its revision (a
// 2026-07-28 one gets no input_required it cannot answer): the terminal
// decides.
func TestWalk_HostApprovalsHostWithoutElicitation(t *testing.T) {
	for _, version := range []string{"2025-11-25", modernVersion} {
		t.Run(version, func(t *testing.T) {
			walk(t, func(t *testing.T) {
				p := hostApproveProxy(t)
				s := startSDKHostAt(t, p.Proxy, version, nil)
				ch := callAsync(s, "db__mv", map[string]any{"from": "plain"})
				p.approvePending(t, "mv")
				if r := <-ch; r.err != nil || r.res.IsError {
					t.Fatalf("mv of a host without elicitation: %v %+v", r.err, r.res)
				}
				if evs := p.approvalEvents(t); len(evs) != 1 || evs[0]["by"] == "host" {
					t.Fatalf("approval events: %v", evs)
				}
			})
		})
	}
}

// A 2026-07-28 host is asked in the call's answer (input_required); its
// retry with the form's answer approves the call, which runs once. A rule
// with ask_in = "host" is put to the host too.
func TestWalk_HostApprovalsModernHost(t *testing.T) {
	walk(t, func(t *testing.T) {
		p := hostApproveProxy(t)
		f := &formHost{}
		f.set(choose("approve"))
		s := startSDKHostAt(t, p.Proxy, modernVersion, f.opts())
		upstream := func() int { return len(p.received(t, "db", "tools/call")) }
		if res, err := callTool(s, "db__mv", map[string]any{"from": "modern"}); err != nil || res.IsError {
			t.Fatalf("mv approved by a modern host: %v %+v", err, res)
		}
		if len(f.shown()) != 1 || upstream() != 1 {
			t.Fatalf("forms %d, upstream calls %d", len(f.shown()), upstream())
		}
		if evs := p.approvalEvents(t); len(evs) != 1 || evs[0]["by"] != "host" {
			t.Fatalf("approval events: %v", evs)
		}
		if res, err := callTool(s, "db__hostonly", map[string]any{}); err != nil || res.IsError || len(f.shown()) != 2 || upstream() != 2 {
			t.Fatalf("hostonly approved by a modern host: %v %+v; forms %d, upstream calls %d", err, res, len(f.shown()), upstream())
		}
	})
}
