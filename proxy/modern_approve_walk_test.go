package proxy

import (
	"context"
	"errors"
	"regexp"
	"strconv"
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

// approvePending approves the approval of a call to tool (the upstream's
// name) waiting for the operator, as the operator's terminal records it,
// once it is there. An approval whose wait is over is not waiting, even
// before anything marks it expired.
func (m *memProxy) approvePending(t *testing.T, tool string) {
	t.Helper()
	m.decidePending(t, tool, true, "")
}

// decidePending is approvePending, approving or denying with reason; it
// returns the approval decided.
func (m *memProxy) decidePending(t *testing.T, tool string, approve bool, reason string) ledger.Approval {
	t.Helper()
	var a ledger.Approval
	eventually(t, "the approval of "+tool, func() bool {
		for _, x := range m.approvals(t, ledger.ApprovalPending) {
			if x.Tool == tool && time.Now().Before(x.ExpiresAt) {
				a = x
				return true
			}
		}
		return false
	})
	shown := func(a ledger.Approval) (string, error) { return a.PresentationDigest, nil }
	if err := m.led.DecideApproval(context.Background(), a.ID, a.PresentationDigest, approve, reason, shown); err != nil {
		t.Fatalf("decide: %v", err)
	}
	return a
}

// approvedOnce checks that a modern host's call the operator approved
// once came back with the host's answer to the server's elicitation, the
// host asked once, the approval used, and one call forwarded.
func approvedOnce(t *testing.T, p *memProxy, done <-chan sdkResult, elicited *atomic.Int32) {
	t.Helper()
	r := <-done
	if r.err != nil || r.res.IsError || !strings.Contains(textOf(r.res), `"sure":true`) || elicited.Load() != 1 {
		t.Fatalf("approved call: %v %+v (host asked %d times)", r.err, r.res, elicited.Load())
	}
	if as := p.approvals(t, ""); len(as) != 1 || as[0].State != ledger.ApprovalUsed {
		t.Fatalf("approvals: %+v, want one, used", as)
	}
	if calls := p.received(t, "db", "tools/call"); len(calls) != 1 {
		t.Fatalf("the upstream got %d calls", len(calls))
	}
}

// sdkResult is what a go-sdk host's call came back with.
type sdkResult struct {
	res *sdk.CallToolResult
	err error
}

// callAsync calls tool from s on its own goroutine.
func callAsync(s *sdk.ClientSession, tool string, args map[string]any) <-chan sdkResult {
	done := make(chan sdkResult, 1)
	go func() {
		res, err := callTool(s, tool, args)
		done <- sdkResult{res, err}
	}()
	return done
}

// A modern host's call the operator approves, whose upstream then asks the
// host for input: the host's retry continues it without a second
// approval, and the approval is used once.
func TestWalk_ModernRetryNotApprovedAgain(t *testing.T) {
	walk(t, func(t *testing.T) {
		rules := []classify.Rule{
			{Server: "db", Tool: "confirm", Class: classify.Write, Action: classify.Ask},
			{Server: "db", Tool: "*", Class: classify.Read, Action: classify.Allow},
		}
		g := gate.New(mustRules(t, rules), gate.WithClientAccess(map[string]gate.ClientAccess{"db": {Elicitation: config.AccessAllow}}))
		p := newMemProxyGate(t, g, nil, [2]string{"db", confirmTools})
		var elicited atomic.Int32
		s := startSDKHostAt(t, p.Proxy, modernVersion, modernOpts(&elicited, true))
		done := callAsync(s, "db__confirm", map[string]any{"x": 1})
		p.approvePending(t, "confirm")
		approvedOnce(t, p, done, &elicited)
	})
}

// allow_elicitation = "ask" with a modern host: the server's request
// waits for the operator once, and the host is not asked before the
// operator approves; approved, it reaches the host as input_required, and
// the host's retry is not held again.
func TestWalk_ModernElicitationAskApprovedOnce(t *testing.T) {
	walk(t, func(t *testing.T) {
		g := gate.New(mustRules(t, dbRules), gate.WithClientAccess(map[string]gate.ClientAccess{"db": {Elicitation: config.AccessAsk}}))
		p := newMemProxyGate(t, g, nil, [2]string{"db", confirmTools})
		var elicited atomic.Int32
		s := startSDKHostAt(t, p.Proxy, modernVersion, modernOpts(&elicited, true))
		done := callAsync(s, "db__confirm", map[string]any{"x": 1})
		eventually(t, "the approval", func() bool { return len(p.approvals(t, ledger.ApprovalPending)) == 1 })
		if n := elicited.Load(); n != 0 {
			t.Fatalf("the host was asked %d times before the operator approved", n)
		}
		p.approvePending(t, "elicitation/create")
		approvedOnce(t, p, done, &elicited)
	})
}

// While a call waits for the operator, a host that gave a progress token
// hears that it waits, with the approval's ID; approved, the call runs.
func TestWalk_ApprovalWaitSendsProgress(t *testing.T) {
	walk(t, func(t *testing.T) {
		p := newMemProxyWith(t, mustRules(t, dbAskEcho), func(o *Options) { o.Limits.ApprovalWait = 20 * time.Second }, [2]string{"db", confirmTools})
		heard := make(chan string, 16)
		s := startSDKHost(t, p.Proxy, &sdk.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *sdk.ProgressNotificationClientRequest) {
			if r.Params.ProgressToken == "wait-1" {
				heard <- r.Params.Message
			}
		}})
		done := make(chan error, 1)
		go func() {
			params := &sdk.CallToolParams{Name: "db__echo", Arguments: map[string]any{"q": 1}}
			params.SetProgressToken("wait-1")
			res, err := s.CallTool(context.Background(), params)
			if err == nil && res.IsError {
				err = errors.New(textOf(res))
			}
			done <- err
		}()
		var as []ledger.Approval
		eventually(t, "the approval", func() bool { as = p.approvals(t, ledger.ApprovalPending); return len(as) == 1 })
		select {
		case msg := <-heard:
			if !strings.Contains(msg, "mcp-guard approve "+itoa(int(as[0].ID))) {
				t.Fatalf("the progress the host heard: %q; want the approval's ID", msg)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the host heard no progress while its call waited")
		}
		p.approvePending(t, "echo")
		if err := <-done; err != nil {
			t.Fatalf("the approved call: %v", err)
		}
		if n := len(p.received(t, "db", "tools/call")); n != 1 {
			t.Fatalf("the upstream got %d calls, want 1", n)
		}
	})
}

// Denied, with a reason: the host reads the operator's reason, nothing
// reaches the upstream, and the ledger row says so.
func TestWalk_DenyReturnsTheReason(t *testing.T) {
	walk(t, func(t *testing.T) {
		p := newMemProxyWith(t, mustRules(t, dbAskEcho), func(o *Options) { o.Limits.ApprovalWait = 20 * time.Second }, [2]string{"db", confirmTools})
		s := startSDKHost(t, p.Proxy, nil)
		done := callAsync(s, "db__echo", map[string]any{"q": 1})
		a := p.decidePending(t, "echo", false, "not on a Friday")
		r := <-done
		if r.err != nil || !r.res.IsError || !strings.Contains(textOf(r.res), "denied the call to db/echo (approval "+itoa(int(a.ID))+"): not on a Friday") {
			t.Fatalf("the denied call: %v %+v", r.err, r.res)
		}
		if n := len(p.received(t, "db", "tools/call")); n != 0 {
			t.Fatal("a denied call reached the upstream")
		}
		if rows := p.rowsOf(t, "echo"); len(rows) != 1 || rows[0].State != "refused" || !strings.Contains(rows[0].Reason, "not on a Friday") {
			t.Fatalf("the ledger rows: %+v", rows)
		}
	})
}

// A host session may have only limits.pending_approvals asks waiting;
// past that, the host is told so and nothing more is held.
func TestWalk_PendingApprovalsAreBounded(t *testing.T) {
	walk(t, func(t *testing.T) {
		p := newMemProxyWith(t, mustRules(t, dbAskEcho), func(o *Options) {
			o.Limits.ApprovalWait, o.Limits.PendingApprovals = 20*time.Second, 1
		}, [2]string{"db", confirmTools})
		s := startSDKHost(t, p.Proxy, nil)
		first := callAsync(s, "db__echo", map[string]any{"q": 1})
		eventually(t, "the first approval", func() bool { return len(p.approvals(t, ledger.ApprovalPending)) == 1 })
		if res, err := callTool(s, "db__echo", map[string]any{"q": 2}); err != nil || !res.IsError || !strings.Contains(textOf(res), "limits.pending_approvals") {
			t.Fatalf("a second ask while one waits: %v %+v", err, res)
		}
		p.decidePending(t, "echo", false, "")
		<-first
		if as := p.approvals(t, ""); len(as) != 1 {
			t.Fatalf("approvals %+v; the refused ask must not make one", as)
		}
	})
}

// Nobody decides while the host waits: the host reads the approval's ID and
// is told to call again; an approval given later is a grant that only the
// identical request consumes, once.
func TestWalk_LateApprovalIsASingleUseGrant(t *testing.T) {
	walk(t, func(t *testing.T) {
		p := newMemProxyWith(t, mustRules(t, dbAskEcho), func(o *Options) { o.Limits.ApprovalWait = time.Second }, [2]string{"db", confirmTools})
		s := startSDKHost(t, p.Proxy, nil)
		call := func(q int) *sdk.CallToolResult {
			t.Helper()
			res, err := callTool(s, "db__echo", map[string]any{"q": q})
			if err != nil {
				t.Fatalf("echo %d: %v", q, err)
			}
			return res
		}
		res := call(1)
		m := regexp.MustCompile(`It is approval (\d+): once the operator approves it \(mcp-guard approve \d+\), call again with exactly the same arguments within 10m0s`).FindStringSubmatch(textOf(res))
		if !res.IsError || m == nil {
			t.Fatalf("not decided in time: %+v", res)
		}
		id, _ := strconv.ParseInt(m[1], 10, 64)
		a, err := p.led.Approval(context.Background(), id)
		if err != nil || a.State != ledger.ApprovalPending {
			t.Fatalf("the approval after the host stopped waiting: %+v %v", a, err)
		}
		shown := func(a ledger.Approval) (string, error) { return a.PresentationDigest, nil }
		if err := p.led.DecideApproval(context.Background(), id, a.PresentationDigest, true, "", shown); err != nil {
			t.Fatalf("late approve: %v", err)
		}
		// Changed arguments do not match the grant: a new ask, which times out.
		if res := call(2); !res.IsError {
			t.Fatal("changed arguments ran on the grant")
		}
		if n := len(p.received(t, "db", "tools/call")); n != 0 {
			t.Fatalf("the upstream got %d calls before the identical re-issue", n)
		}
		// The identical request runs once on the grant.
		if res := call(1); res.IsError {
			t.Fatalf("the identical re-issue: %+v", res)
		}
		if n := len(p.received(t, "db", "tools/call")); n != 1 {
			t.Fatalf("the upstream got %d calls, want 1", n)
		}
		// A second identical re-issue finds the grant used: it waits again.
		if res := call(1); !res.IsError {
			t.Fatal("the grant was used twice")
		}
		if n := len(p.received(t, "db", "tools/call")); n != 1 {
			t.Fatalf("the upstream got %d calls, want 1", n)
		}
		grants := 0
		for _, r := range p.rowsOf(t, "echo") {
			if r.Decision == "grant" {
				grants++
			}
		}
		if grants != 1 {
			t.Fatalf("%d calls ran on a grant, want 1", grants)
		}
	})
}
