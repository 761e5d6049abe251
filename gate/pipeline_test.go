package gate

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-guard/mcp-guard/approvals"
	"github.com/mcp-guard/mcp-guard/classify"
	"github.com/mcp-guard/mcp-guard/config"
	"github.com/mcp-guard/mcp-guard/ledger"
	"github.com/mcp-guard/mcp-guard/pin"
)

// A pipeline over a real ledger in a temporary file.
type pipeTest struct {
	t    *testing.T
	l    *ledger.Ledger
	p    *Pipeline
	sess *ledger.Session
	path string

	mu    sync.Mutex // what request has shown, each a new view in p.Shown
	tools map[string]ExposedTool
	items map[pin.ItemKind]map[string]ExposedItem
}

func newPipeTest(t *testing.T) *pipeTest {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ledger.db")
	return openPipeTest(t, path)
}

func openPipeTest(t *testing.T, path string) *pipeTest {
	t.Helper()
	return openPipeTestAt(t, path, nil)
}

// openPipeTestAt is openPipeTest with the ledger and pipeline on the clock
// now (nil: time.Now).
func openPipeTestAt(t *testing.T, path string, now func() time.Time) *pipeTest {
	t.Helper()
	ctx := context.Background()
	l, err := ledger.Open(ctx, path, ledger.Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	s, err := l.StartSession(ctx, ledger.SessionInfo{Kind: "test"})
	if err != nil {
		t.Fatal(err)
	}
	rules, err := classify.Compile([]classify.Rule{
		{Server: "fs", Tool: "read_*", Class: classify.Read, Action: classify.Allow},
		{Server: "fs", Tool: "write_file", Class: classify.Write, Action: classify.Allow},
		{Server: "fs", Tool: "delete_*", Class: classify.Destructive, Action: classify.Deny, Reason: "never"},
		{Server: "fs", Tool: "move_file", Class: classify.Write, Action: classify.Ask},
		{Server: "fs", Prompt: "greet", Class: classify.Read, Action: classify.Allow},
		{Server: "fs", Prompt: "secret", Class: classify.Read, Action: classify.Deny},
		{Server: "fs", Resource: "file:///pub/**", Class: classify.Read, Action: classify.Allow},
	})
	if err != nil {
		t.Fatal(err)
	}
	p := &Pipeline{Gate: New(rules, WithClientAccess(testAccess)), Ledger: l, Now: now, Limits: config.Limits{ResultBytes: 64, ApprovalWait: 3 * time.Second, PendingApprovals: 2, GrantTTL: time.Minute},
		Shown: &Shown{}}
	return &pipeTest{t: t, l: l, p: p, sess: s, path: path,
		tools: map[string]ExposedTool{}, items: map[pin.ItemKind]map[string]ExposedItem{pin.Prompts: {}, pin.Resources: {}}}
}

// show exposes what r names, as the host was shown it, in a new view of
// the pipeline's Shown: r is current until a test changes its PinDigest
// (the host was shown another definition).
func (pt *pipeTest) show(r *Request) {
	if pt.p.Shown == nil {
		return // a pipeline that checks no exposure
	}
	pt.mu.Lock()
	defer pt.mu.Unlock()
	switch r.Kind {
	case KindTool:
		t := pin.Tool{Name: r.Name, Raw: json.RawMessage(`{"name":` + strconv.Quote(r.Name) + `}`)}
		pt.tools[r.Exposed] = ExposedTool{Name: r.Exposed, Server: r.Server, Tool: t}
		r.PinDigest = t.Digest()
	case KindPrompt, KindResource:
		kind := pin.Prompts
		if r.Kind == KindResource {
			kind = pin.Resources
		}
		it := pin.Item{Kind: kind, Key: r.Name, Raw: json.RawMessage(`{"name":` + strconv.Quote(r.Name) + `}`)}
		pt.items[kind][r.Exposed] = ExposedItem{Server: r.Server, Item: it, Host: r.Exposed}
		r.ItemKind, r.Listed, r.PinDigest = kind, r.Exposed, it.Digest()
	default:
		return
	}
	items := map[pin.ItemKind]map[string]ExposedItem{}
	for k, m := range pt.items {
		items[k] = maps.Clone(m)
	}
	pt.p.Shown.Set(&View{Exposed: maps.Clone(pt.tools), Content: &ContentView{Exposed: items}})
}

// testAccess is what the test servers may ask of the host: fs may ask
// anything of it, asker only once the operator approves, closed nothing.
var testAccess = map[string]ClientAccess{
	"fs":    {Sampling: config.AccessAllow, Elicitation: config.AccessAllow, Roots: []string{"file:///work"}},
	"asker": {Sampling: config.AccessAsk, Elicitation: config.AccessAsk},
}

// forwarder answers res (or err) and counts what reached it.
type forwarder struct {
	n   atomic.Int32
	res string
	err error
}

func (f *forwarder) Forward(ctx context.Context, call int64, late func(json.RawMessage, error)) (json.RawMessage, error) {
	f.n.Add(1)
	return json.RawMessage(f.res), f.err
}

func (pt *pipeTest) request(kind Kind, name, args string) *Request {
	var pending atomic.Int64
	r := &Request{Kind: kind, Session: pt.p.Gate.NewSession(config.Limits{CallsPerSession: 100, CallsPerToolPerMinute: 100, IdenticalCallRepeats: 100, ConsecutiveDenials: 100}, nil),
		SessionID: pt.sess.ID(), Server: "fs", Name: name, Exposed: "fs_" + name, Pending: &pending, Schema: anyObject(pt.t)}
	if args != "" {
		r.Args = []byte(args)
	}
	pt.show(r)
	return r
}

func (pt *pipeTest) rows() int {
	pt.t.Helper()
	cs, err := pt.l.Calls(context.Background(), ledger.CallFilter{Limit: 1000})
	if err != nil {
		pt.t.Fatal(err)
	}
	return len(cs)
}

// Each kind runs the stages its table names: what is refused is recorded
// and never forwarded; what is allowed is recorded, then forwarded, and
// its answer passes the outcome stage.
func TestPipeline_StagesPerKind(t *testing.T) {
	for _, tc := range []struct {
		name      string
		kind      Kind
		tool      string
		args      string
		res       string
		fwdErr    error
		edit      func(*Request)
		status    Status
		outcome   Outcome
		forwarded bool
		recorded  string // the row's decision; "" no row
		invalid   bool   // the arguments kept out of band
		msg       string
	}{
		{name: "tool allowed", kind: KindTool, tool: "read_file", args: `{"path":"/a"}`, res: `{"content":[]}`, status: Done, outcome: Allow, forwarded: true, recorded: "allow"},
		{name: "tool denied", kind: KindTool, tool: "delete_file", args: `{}`, status: Refused, outcome: Deny, recorded: "deny", msg: "denied by rule 3: never (ledger call"},
		{name: "tool no rule", kind: KindTool, tool: "chmod", args: `{}`, status: Refused, outcome: Deny, recorded: "deny", msg: "no rule allows"},
		{name: "tool args unreadable", kind: KindTool, tool: "read_file", args: `{"a":1,"a":2}`, status: Refused, outcome: Invalid, recorded: "invalid", invalid: true, msg: "duplicate"},
		{name: "tool withdrawn", kind: KindTool, tool: "read_file", args: `{}`, edit: func(r *Request) {
			r.PinDigest = "the pin of an older definition"
		}, status: Withdrawn, recorded: "unknown_tool", msg: "fs_read_file was withdrawn"},
		{name: "prompt withdrawn", kind: KindPrompt, tool: "greet", args: `{"who":"me"}`, edit: func(r *Request) {
			r.PinDigest = "the pin of an older definition"
		}, status: Withdrawn, recorded: "unknown_prompt", msg: "fs_greet was withdrawn"},
		{name: "resource withdrawn", kind: KindResource, tool: "file:///pub/a", edit: func(r *Request) {
			r.Listed = "file:///pub/{name}" // no template of that name is shown
		}, status: Withdrawn, recorded: "unknown_resource", msg: "fs_file:///pub/a was withdrawn"},
		{name: "tool result over limit", kind: KindTool, tool: "read_file", args: `{}`, res: `{"content":[{"type":"text","text":"` + strings.Repeat("x", 80) + `"}]}`, status: Replaced, outcome: Allow, forwarded: true, recorded: "allow", msg: "over limits.result_bytes (64)"},
		{name: "tool forward fails", kind: KindTool, tool: "read_file", args: `{}`, fwdErr: errors.New("boom"), status: Failed, outcome: Allow, forwarded: true, recorded: "allow"},
		{name: "prompt allowed", kind: KindPrompt, tool: "greet", args: `{"who":"me"}`, res: `{"messages":[]}`, status: Done, outcome: Allow, forwarded: true, recorded: "allow"},
		{name: "prompt denied", kind: KindPrompt, tool: "secret", status: Refused, outcome: Deny, recorded: "deny", msg: "fs/prompt:secret denied"},
		{name: "prompt args not strings", kind: KindPrompt, tool: "greet", args: `{"n":1}`, status: Refused, outcome: Invalid, recorded: "invalid", invalid: true, msg: "not all strings"},
		{name: "resource allowed", kind: KindResource, tool: "file:///pub/a", res: `{"contents":[]}`, status: Done, outcome: Allow, forwarded: true, recorded: "allow"},
		{name: "resource denied", kind: KindResource, tool: "file:///etc/passwd", status: Refused, outcome: Deny, recorded: "deny", msg: "no rule allows this URI"},
		{name: "subscribe allowed, not recorded", kind: KindSubscribe, tool: "file:///pub/a", status: Done, outcome: Allow, forwarded: true},
		{name: "subscribe denied, not recorded", kind: KindSubscribe, tool: "file:///etc/passwd", status: Refused, outcome: Deny, msg: "no subscription to fs_file:///etc/passwd: fs/resource:file:///etc/passwd denied"},
		{name: "sampling allowed", kind: KindSampling, tool: "sampling/createMessage", args: `{"messages":[]}`, res: `{"role":"assistant"}`, status: Done, outcome: Allow, forwarded: true, recorded: "allow"},
		{name: "sampling without a caller", kind: KindSampling, tool: "sampling/createMessage", args: `{}`, edit: func(r *Request) { r.Refuse = errors.New("no host call is in flight") },
			status: Refused, outcome: Deny, recorded: "deny", msg: "no host call is in flight"},
		{name: "sampling params fold", kind: KindSampling, tool: "sampling/createMessage", args: `{"a":1,"A":2}`, status: Refused, outcome: Invalid, recorded: "invalid", msg: "params refused"},
		{name: "sampling answer fold", kind: KindSampling, tool: "sampling/createMessage", args: `{}`, res: `{"k":1,"K":2}`, status: Replaced, outcome: Allow, forwarded: true, recorded: "allow", msg: "host's answer to sampling/createMessage was refused"},
		{name: "elicitation to ask unreadable", kind: KindElicitation, tool: "elicitation/create", args: `{"a":1,"a":1}`, edit: func(r *Request) { r.Server = "asker" },
			status: Refused, outcome: Invalid, recorded: "invalid", invalid: true, msg: "cannot be shown to the operator"},
		{name: "roots answered from the config", kind: KindRoots, tool: "roots/list", args: `{}`, res: `{"roots":[{"uri":"file:///work"}]}`, status: Done, outcome: Allow, forwarded: true, recorded: "allow"},
		{name: "roots params recorded, not read", kind: KindRoots, tool: "roots/list", args: `{"a":1,"A":2}`, res: `{"roots":[]}`, status: Done, outcome: Allow, forwarded: true, recorded: "allow"},
		{name: "roots not offered", kind: KindRoots, tool: "roots/list", edit: func(r *Request) { r.Server = "asker" },
			status: Refused, outcome: Deny, recorded: "deny", msg: "the server's config does not allow roots/list"},
		{name: "sampling not offered", kind: KindSampling, tool: "sampling/createMessage", args: `{"messages":[]}`, edit: func(r *Request) { r.Server = "closed" },
			status: Refused, outcome: Deny, recorded: "deny", msg: "the server's config does not allow sampling/createMessage"},
		{name: "elicitation not offered", kind: KindElicitation, tool: "elicitation/create", args: `{}`, edit: func(r *Request) { r.Server = "closed" },
			status: Refused, outcome: Deny, recorded: "deny", msg: "the server's config does not allow elicitation/create"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pt := newPipeTest(t)
			r := pt.request(tc.kind, tc.tool, tc.args)
			if tc.edit != nil {
				tc.edit(r)
			}
			f := &forwarder{res: tc.res, err: tc.fwdErr}
			res := pt.p.Run(context.Background(), r, f)
			if res.Status != tc.status {
				t.Fatalf("status %v, want %v (%q)", res.Status, tc.status, res.Message)
			}
			if tc.status != Withdrawn && res.Decision.Outcome != tc.outcome {
				t.Errorf("outcome %v, want %v", res.Decision.Outcome, tc.outcome)
			}
			if got := f.n.Load() > 0; got != tc.forwarded {
				t.Errorf("forwarded %v, want %v", got, tc.forwarded)
			}
			if !strings.Contains(res.Message, tc.msg) {
				t.Errorf("message %q, want it to contain %q", res.Message, tc.msg)
			}
			if tc.status == Failed && !errors.Is(res.Err, tc.fwdErr) {
				t.Errorf("err %v, want %v", res.Err, tc.fwdErr)
			}
			if tc.recorded == "" {
				if n := pt.rows(); n != 0 {
					t.Errorf("%d rows recorded, want none", n)
				}
				return
			}
			if pt.rows() != 1 {
				t.Fatalf("%d rows, want 1", pt.rows())
			}
			cs, _ := pt.l.Calls(context.Background(), ledger.CallFilter{})
			c := cs[0]
			if res.CallID != 0 && c.ID != res.CallID {
				t.Errorf("result names call %d, the ledger holds %d", res.CallID, c.ID)
			}
			if c.Decision != tc.recorded {
				t.Errorf("recorded %q, want %q", c.Decision, tc.recorded)
			}
			if c.Kind != tc.kind.LedgerKind() || c.DecodeError != "" {
				t.Errorf("recorded kind %q (%s), want %q", c.Kind, c.DecodeError, tc.kind.LedgerKind())
			}
			if tc.invalid && (len(c.ArgsInvalid) == 0 || len(c.Args) != 0) {
				t.Errorf("arguments not kept out of band: args %q invalid %q", c.Args, c.ArgsInvalid)
			}
		})
	}
}

// L7: an allowed, non-read call identical to one a crash interrupted asks
// the operator; a read, or another call, is allowed. Run asks it in the
// call's commit, Explain of the ledger: they agree, and the call Run holds
// is recorded once, as the ask, and not forwarded.
func TestPipeline_InterruptedCallAsks(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	dead, err := ledger.Open(ctx, path, ledger.Options{Now: func() time.Time { return time.Now().Add(-time.Hour) }})
	if err != nil {
		t.Fatal(err)
	}
	ds, err := dead.StartSession(ctx, ledger.SessionInfo{Kind: "test"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range []string{"write_file", "read_file"} {
		if _, err := dead.RecordCall(ctx, ledger.CallStart{SessionID: ds.ID(), Server: "fs", Tool: tool, Args: []byte(`{"p":1}`), Decision: "allow"}); err != nil {
			t.Fatal(err)
		}
	}
	dead.Close()
	pt := openPipeTest(t, path)
	pt.p.Limits.ApprovalWait = 50 * time.Millisecond
	if _, err := pt.l.RecoverInterrupted(ctx); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		tool, args string
		want       Status
	}{
		{"write_file", `{"p":2}`, Done},
		{"write_file", `{"p":1}`, HeldBack},
		{"read_file", `{"p":1}`, Done},
	} {
		explained, _ := pt.p.Explain(ctx, pt.request(KindTool, tc.tool, tc.args))
		rows := pt.rows()
		f := &forwarder{res: `{"content":[]}`}
		res := pt.p.Run(ctx, pt.request(KindTool, tc.tool, tc.args), f)
		if explained.Status != tc.want || res.Status != tc.want {
			t.Errorf("%s %s: explain %v, run %v (%q), want %v", tc.tool, tc.args, explained.Status, res.Status, res.Message, tc.want)
		}
		if tc.want != HeldBack {
			continue
		}
		cs, err := pt.l.Calls(ctx, ledger.CallFilter{Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		for who, d := range map[string]Decision{"explain": explained.Decision, "run": res.Decision} {
			if d.Stage != StageInterrupted || !strings.Contains(d.Reason, "interrupted by a crash") {
				t.Errorf("%s: %s: %s", who, d.Stage, d.Reason)
			}
		}
		// The ask, released when nobody decided in time; nothing else.
		if pt.rows() != rows+1 || cs[0].Decision != "ask" || f.n.Load() != 0 {
			t.Errorf("run: %d rows (%d before), the last %s %q; forwarded %d", pt.rows(), rows, cs[0].Decision, cs[0].Reason, f.n.Load())
		}
	}
}

// An ask is recorded with its approval and held: approved, it is forwarded
// once; denied, it is not, and the host reads the operator's reason; the
// host's cancel withdraws it; past the pending limit it is refused at once.
func TestPipeline_AskHeldForTheOperator(t *testing.T) {
	// pending polls the ledger until the request's approval is pending:
	// the pipeline holds it.
	pending := func(pt *pipeTest) (ledger.Approval, bool) {
		for i := 0; i < 500; i++ {
			as, err := pt.l.Approvals(context.Background(), ledger.ApprovalPending, 0, 10)
			if err == nil && len(as) == 1 {
				return as[0], true
			}
			time.Sleep(20 * time.Millisecond)
		}
		pt.t.Error("no approval appeared")
		return ledger.Approval{}, false
	}
	decide := func(pt *pipeTest, approve bool, reason string) {
		a, ok := pending(pt)
		if !ok {
			return
		}
		shown, err := approvals.Decidable(a)
		if err != nil {
			pt.t.Error(err)
			return
		}
		if err := pt.l.DecideApproval(context.Background(), a.ID, shown, approve, reason, approvals.Decidable); err != nil {
			pt.t.Error(err)
		}
	}
	for _, tc := range []struct {
		name      string
		kind      Kind
		tool      string
		act       func(pt *pipeTest, cancel func())
		pending   int64
		status    Status
		forwarded bool
		msg       string
	}{
		{name: "approved", kind: KindTool, tool: "move_file", act: func(pt *pipeTest, _ func()) { decide(pt, true, "") }, status: Done, forwarded: true},
		{name: "denied", kind: KindTool, tool: "move_file", act: func(pt *pipeTest, _ func()) { decide(pt, false, "not today") }, status: HeldBack, msg: "the operator denied the call to fs/move_file (approval 1): not today"},
		{name: "host cancels", kind: KindTool, tool: "move_file", act: func(pt *pipeTest, cancel func()) { pending(pt); cancel() }, status: Cancelled, msg: "cancelled by the host while waiting for approval 1"},
		{name: "pending limit", kind: KindTool, tool: "move_file", pending: 2, status: HeldBack, msg: "2 calls already wait for it"},
		{name: "client approved", kind: KindElicitation, tool: "elicitation/create", act: func(pt *pipeTest, _ func()) { decide(pt, true, "") }, status: Done, forwarded: true},
		{name: "client denied", kind: KindElicitation, tool: "elicitation/create", act: func(pt *pipeTest, _ func()) { decide(pt, false, "no") }, status: HeldBack, msg: "the operator denied elicitation/create (approval 1): no"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pt := newPipeTest(t)
			r := pt.request(tc.kind, tc.tool, `{"a":"b"}`)
			if tc.kind.client() {
				r.Server = "asker" // its config says ask
			}
			r.Pending.Store(tc.pending)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.act != nil {
				go tc.act(pt, cancel)
			}
			f := &forwarder{res: `{"content":[]}`}
			res := pt.p.Run(ctx, r, f)
			if res.Status != tc.status || !strings.Contains(res.Message, tc.msg) {
				t.Fatalf("status %v %q, want %v containing %q", res.Status, res.Message, tc.status, tc.msg)
			}
			if got := f.n.Load(); got != map[bool]int32{true: 1, false: 0}[tc.forwarded] {
				t.Errorf("forwarded %d times", got)
			}
			if r.Pending.Load() != tc.pending {
				t.Errorf("pending %d after the ask, want %d", r.Pending.Load(), tc.pending)
			}
			cs, _ := pt.l.Calls(context.Background(), ledger.CallFilter{})
			if len(cs) != 1 {
				t.Fatalf("%d rows, want 1", len(cs))
			}
			if tc.pending > 0 && (cs[0].Decision != "deny" || cs[0].Reason != "limit: pending_approvals") {
				t.Errorf("recorded %s %q", cs[0].Decision, cs[0].Reason)
			}
		})
	}
}

// A tool ask nobody decided in time is released; an approval given later
// is a grant an identical re-issue runs on, once.
func TestPipeline_LateApprovalIsAGrant(t *testing.T) {
	pt := newPipeTest(t)
	pt.p.Limits.ApprovalWait = 200 * time.Millisecond
	ctx := context.Background()
	f := &forwarder{res: `{"content":[]}`}
	res := pt.p.Run(ctx, pt.request(KindTool, "move_file", `{"a":"b"}`), f)
	if res.Status != HeldBack || !strings.Contains(res.Message, "within 1m0s and it will run once") {
		t.Fatalf("%v %q", res.Status, res.Message)
	}
	as, err := pt.l.Approvals(ctx, ledger.ApprovalPending, 0, 10)
	if err != nil || len(as) != 1 {
		t.Fatalf("pending approvals %v %v", as, err)
	}
	shown, _ := approvals.Decidable(as[0])
	if err := pt.l.DecideApproval(ctx, as[0].ID, shown, true, "", approvals.Decidable); err != nil {
		t.Fatal(err)
	}
	if res := pt.p.Run(ctx, pt.request(KindTool, "move_file", `{"a":"b"}`), f); res.Status != Done || f.n.Load() != 1 {
		t.Fatalf("re-issue on the grant: %v %q, forwarded %d", res.Status, res.Message, f.n.Load())
	}
	pt.p.Limits.ApprovalWait = 50 * time.Millisecond
	if res := pt.p.Run(ctx, pt.request(KindTool, "move_file", `{"a":"b"}`), f); res.Status != HeldBack || f.n.Load() != 1 {
		t.Fatalf("a grant runs once: %v, forwarded %d", res.Status, f.n.Load())
	}
}
