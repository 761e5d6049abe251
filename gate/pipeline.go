package gate

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime/trace"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mcp-guard/mcp-guard/classify"
	"github.com/mcp-guard/mcp-guard/config"
	"github.com/mcp-guard/mcp-guard/ledger"
	"github.com/mcp-guard/mcp-guard/pin"
	"github.com/mcp-guard/mcp-guard/secrets"
)

// RecordTimeout bounds a ledger write made on behalf of a request; it runs
// on a context that outlives the host's cancellation (L6).
const RecordTimeout = 30 * time.Second

// ErrNotRecorded is what a host is told when the ledger could not record a
// request, which was therefore not made; the ledger's error is logged.
const ErrNotRecorded = "it could not be recorded in the ledger, so it was not made; the operator's log says why"

// Kind is the kind of request the pipeline runs.
type Kind int

const (
	KindTool        Kind = iota // a host's tools/call
	KindPrompt                  // a host's prompts/get
	KindResource                // a host's resources/read
	KindSubscribe               // a host's resources/subscribe: decided, not recorded
	KindSampling                // an upstream's sampling/createMessage, relayed to the host
	KindElicitation             // an upstream's elicitation/create, relayed to the host
	KindRoots                   // an upstream's roots/list, answered with the configured roots
)

// stages says which of the pipeline's shared stages run for one kind of
// request: a stage that is on or off by kind is switched here. What a kind
// does differently inside a stage (how it is decided, what its row records)
// is in decide and callStart, by kind.
type stages struct {
	ledgerKind  string // ledger.CallStart.Kind
	exposure    bool   // the item is still what the host was shown
	interrupted bool   // L7: an identical call interrupted by a crash asks
	commit      bool   // recorded in the ledger before it is forwarded
	grants      bool   // a late approval is a grant for an identical re-issue
	progress    bool   // the host hears progress while the request is held
	hostAsk     bool   // an ask may be put to the host (ask_in), not only the terminal
	cancelled   bool   // a host's cancel is recorded as "cancelled" and named
	resultLimit bool   // limits.result_bytes applies to the result
	answerFold  bool   // J3 applies to the answer
	noun        string // how refusals name the request: "the call to NAME"
	log         string // what serve's log calls a decision
}

var kinds = [...]stages{
	KindTool:        {exposure: true, interrupted: true, commit: true, grants: true, progress: true, hostAsk: true, cancelled: true, resultLimit: true, noun: "call to", log: "call"},
	KindPrompt:      {ledgerKind: ledger.KindPrompt, exposure: true, commit: true, cancelled: true, resultLimit: true, noun: "get of", log: "prompt"},
	KindResource:    {ledgerKind: ledger.KindResource, exposure: true, commit: true, cancelled: true, resultLimit: true, noun: "read of", log: "read"},
	KindSubscribe:   {noun: "subscription to", log: "subscribe"},
	KindSampling:    {ledgerKind: ledger.KindSampling, commit: true, answerFold: true, log: "upstream request"},
	KindElicitation: {ledgerKind: ledger.KindElicitation, commit: true, answerFold: true, log: "upstream request"},
	KindRoots:       {ledgerKind: ledger.KindRoots, commit: true, log: "upstream request"},
}

func (k Kind) client() bool { return k == KindSampling || k == KindElicitation || k == KindRoots }

// Recorder is the ledger as the pipeline uses it; *ledger.Ledger is one.
type Recorder interface {
	RecordCall(ctx context.Context, c ledger.CallStart) (int64, error)
	RecordAsk(ctx context.Context, c ledger.CallStart, a ledger.ApprovalStart) (callID, approvalID int64, err error)
	ConsumeGrant(ctx context.Context, c ledger.CallStart, check func(ledger.Approval) error) (callID, approvalID int64, err error)
	WasInterrupted(ctx context.Context, server, tool string, args []byte) (bool, error)
	Approval(ctx context.Context, id int64) (ledger.Approval, error)
	CloseApproval(ctx context.Context, id int64, to string) error
	UseApproval(ctx context.Context, id int64, check func(ledger.Approval) error) error
	ReleaseCall(ctx context.Context, approvalID int64) error
	// DecideApprovalBy records a decision made elsewhere than the
	// operator's terminal (the host's form, hostask.go).
	DecideApprovalBy(ctx context.Context, id int64, shown string, approve bool, reason string, check ledger.Decider, by string) error
	ScopeLabels(ctx context.Context, scope string) ([]ledger.Label, error)
	KnownScopeLabels(ctx context.Context, scope string) (labels []ledger.Label, fresh bool, err error)
	GainLabels(ctx context.Context, scope, session string, call int64, labels []string) ([]string, error)
	RecordOutcomeLazy(id int64, o ledger.Outcome, then func(error))
	RecordLateOutcome(ctx context.Context, id int64, o ledger.Outcome) error
}

// Upstream is a connected server, as the pipeline forwards a decided,
// recorded tools/call, prompts/get or resources/read to it: the name and
// the exact argument bytes that were checked and recorded, which it puts
// in the request it sends. upstream.Client is one. late, when not nil,
// receives the answer that comes after ctx ended; onProgress, when set,
// each progress notification the server sends for the call.
type Upstream interface {
	CallTool(ctx context.Context, tool string, args json.RawMessage, onProgress func(json.RawMessage), late func(json.RawMessage, error)) (json.RawMessage, error)
	GetPrompt(ctx context.Context, prompt string, args json.RawMessage, late func(json.RawMessage, error)) (json.RawMessage, error)
	ReadResource(ctx context.Context, uri string, late func(json.RawMessage, error)) (json.RawMessage, error)
}

// Upstreams gives the server of each name as it is connected when a
// request is forwarded: a server started again while the request was
// held for the operator is its new connection. The error says why none
// is connected now, in words the host may read.
type Upstreams interface {
	Upstream(server string) (Upstream, error)
}

// Forwarder sends a decided, recorded request somewhere other than its
// server (a server's request to the host, which the host answers): the
// exact bytes that were checked and recorded, as the call with ledger ID
// call. It returns the raw result. late, when not nil, receives the
// answer that comes after ctx ended.
type Forwarder interface {
	Forward(ctx context.Context, call int64, late func(json.RawMessage, error)) (json.RawMessage, error)
}

// ForwardFunc is a Forwarder.
type ForwardFunc func(ctx context.Context, call int64, late func(json.RawMessage, error)) (json.RawMessage, error)

// Forward calls f.
func (f ForwardFunc) Forward(ctx context.Context, call int64, late func(json.RawMessage, error)) (json.RawMessage, error) {
	return f(ctx, call, late)
}

// Pipeline runs every request through the same stages: strict reading,
// exposure still current, rules and predicates, pinned schema, flows,
// limits, L7 interrupted, commit, grant or approval hold, forward, outcome
// (which adds the rule's labels to the host's scope).
type Pipeline struct {
	Gate   *Gate
	Ledger Recorder
	// Upstreams are the servers a host's request is forwarded to.
	Upstreams Upstreams
	// Shown is what the hosts are shown now: the exposure stage's view.
	// nil checks nothing (explain, which names what it dry-runs).
	Shown  *Shown
	Limits config.Limits    // result_bytes, approval_wait, pending_approvals, grant_ttl
	Now    func() time.Time // nil: time.Now
	Log    *slog.Logger     // nil: discarded
	// Witness, when set, commits the chain head outside the ledger; the
	// witness stage runs it, synchronously, after an exec or destructive
	// call is committed and before it is forwarded (why is the class),
	// so the call that could rewrite the ledger is witnessed first. When
	// it fails, WitnessRequired refuses the call (recorded as failed,
	// never forwarded); otherwise the failure is logged and the call
	// goes on. No other request waits for a witness.
	Witness         func(ctx context.Context, why string) error
	WitnessRequired bool
	// Waiting, when set, hears of each request held for the operator,
	// once, after its approval is recorded and before it waits. It must
	// return at once (a desktop notification is queued, not sent, there).
	Waiting func(Waiting)
	// Secrets, when set, refuses arguments that carry a known secret
	// (the secrets stage), keeps them redacted in the ledger, and gives a
	// scope the label secret when an answer carries a found credential.
	Secrets *secrets.Redactor
	// AskIn, when set, says where the tool calls rule (1-based) holds are
	// asked about: "terminal" (nil: always), "host" (the host too, when it
	// can show a form, and no Waiting), or "both" (the host and Waiting).
	AskIn func(rule int) string
}

// Request is one request as the pipeline reads it.
type Request struct {
	Kind      Kind
	Session   *Session // the host session's limits (tools, prompts, resources)
	SessionID string   // the ledger session it is recorded under
	// Scope is the label scope of the host: labels the request's rule
	// gives join it, and flows check the labels it holds ("": none).
	Scope string
	// Labels, when not nil, are the labels the flow stage reads instead
	// of the scope's (explain --labels).
	Labels *[]ledger.Label
	Server string
	// Name is the upstream's name: a tool, a prompt, a resource URI, or
	// a client request's method.
	Name    string
	Exposed string // the name (or host URI) the host used
	// PinDigest is the pin the host was shown of what it names: a tool
	// (by Exposed), or a prompt, resource or template (ItemKind, as its
	// list named it: Listed, the template a URI read comes from). The
	// exposure stage finds it in Shown; when it is not exposed there under
	// PinDigest any more, the request is refused as Shown's refusal of a
	// name it does not show (withdrawn) and nothing is forwarded.
	PinDigest string
	ItemKind  pin.ItemKind
	Listed    string
	Schema    *pin.Schema // a tool's pinned inputSchema
	Output    *pin.Schema // a tool's pinned outputSchema, checked on its result
	// Args are the exact bytes checked, recorded and forwarded: a tool's or
	// prompt's arguments, a client request's params. A read records
	// {"uri":Name}.
	Args []byte
	// OnProgress, when set, receives each progress notification the
	// server sends while it serves the tools/call (the host asked for
	// them).
	OnProgress func(json.RawMessage)
	// Refuse: why a client request cannot be relayed at all (no host to
	// relay it to). Whether the server may ask it is the gate's
	// (ClientAccess).
	Refuse error
	// Pending counts the host session's requests held for the operator.
	Pending *atomic.Int64
	// Progress, when set, is called about once a second while the request
	// is held, n counting up.
	Progress func(n int, approval int64)
	// AskHost, when set, sends an elicitation/create with params to the
	// host the request came from and returns its answer: the host can show
	// a form (approvals in the host, hostask.go).
	AskHost func(ctx context.Context, params json.RawMessage) (json.RawMessage, error)
}

// Status is how a request ended in the pipeline.
type Status int

const (
	Done        Status = iota // forwarded; Result.Res is the answer
	Withdrawn                 // not current any more: what the host was shown changed
	Refused                   // decided against; Decision says how
	NotRecorded               // not made: it could not be recorded (or its approval made)
	HeldBack                  // held for the operator and not approved: not made
	Cancelled                 // the host cancelled it
	Failed                    // forwarded and failed; Result.Err says why
	Replaced                  // forwarded, but its answer was not passed on
)

// Result is what the pipeline did with a request. Message is what the
// host (or upstream) reads when it did not get Res; it names nothing local.
type Result struct {
	Status   Status
	Decision Decision
	CallID   int64
	Res      json.RawMessage
	Err      error
	Message  string
}

// Explain is the pipeline in dry-run mode: it runs r through every stage
// before the commit (exposure still current, the rules and predicates, the
// pinned schema, the session's limits, L7) and returns what Run would
// decide and what it would record, recording and forwarding nothing. The
// status is Withdrawn, Refused, HeldBack (an ask) or Done (allowed).
// r.Session counts the request as Run's would; limits that act later
// (pending asks, approval wait, result size) are not applied.
func (p *Pipeline) Explain(ctx context.Context, r *Request) (Result, ledger.CallStart) {
	st := &kinds[r.Kind]
	if st.exposure && !p.isCurrent(r) {
		start := p.Shown.withdrawn(r).Row()
		return Result{Status: Withdrawn, Message: fmt.Sprintf("mcp-guard: %s was withdrawn: its definition changed and waits for the operator", r.Exposed)}, start
	}
	d := p.decided(ctx, r)
	var start ledger.CallStart
	if st.commit {
		start = p.callStart(r, &d)
	}
	res := Result{Status: Refused, Decision: d, Message: d.Message}
	switch d.Outcome {
	case Allow:
		res.Status = Done
	case Ask:
		res.Status = HeldBack
	}
	return res, start
}

// Run runs r through the pipeline, forwarding it when every stage lets it
// through: to its server (Upstreams), or with fwd when fwd is not nil (a
// server's request, which goes to the host).
func (p *Pipeline) Run(ctx context.Context, r *Request, fwd Forwarder) Result {
	st := &kinds[r.Kind]
	if st.exposure && !p.current(ctx, r) {
		return Result{Status: Withdrawn, Message: fmt.Sprintf("mcp-guard: %s was withdrawn: its definition changed and waits for the operator", r.Exposed)}
	}
	d := p.decide(ctx, r, st.commit)
	if !st.commit {
		if d.Outcome != Allow {
			return Result{Status: Refused, Decision: d, Message: fmt.Sprintf("mcp-guard: no %s %s: %s", st.noun, r.Exposed, strings.TrimPrefix(d.Message, "mcp-guard: "))}
		}
		return p.forward(ctx, r, fwd, 0, d)
	}
	var id int64
	for attempt := 1; ; attempt++ {
		start := p.callStart(r, &d)
		if d.Outcome == Ask {
			return p.ask(ctx, r, fwd, d, start)
		}
		// L7 is asked in the call's own commit: from the writer's set of
		// interrupted calls, no read of the ledger on the way. So are the
		// labels the flow stage decided on, when they were the ones this
		// process knew.
		start.IfNotInterrupted = l7Applies(r, d)
		if d.checkLabels && d.Outcome == Allow {
			start.IfLabels = &ledger.LabelsCheck{Scope: r.Scope, Labels: d.labelsRead}
		}
		var err error
		trace.Log(ctx, ledger.TraceStage, "decided")
		id, err = p.commit(ctx, start)
		var changed *ledger.LabelsChangedError
		if errors.As(err, &changed) && attempt < maxLabelChecks {
			d = p.reflow(r, d, changed.Labels)
			continue
		}
		if errors.Is(err, ledger.ErrInterrupted) {
			d = interruptedAsk(d, nil)
			return p.ask(ctx, r, fwd, d, p.callStart(r, &d))
		}
		if err != nil {
			p.log().Error(st.log+" not recorded, so not made", "server", r.Server, "name", r.Exposed, "err", err)
			return Result{Status: NotRecorded, Decision: d, Message: p.notMade(r, ErrNotRecorded)}
		}
		break
	}
	trace.Log(ctx, ledger.TraceStage, "committed")
	// An allowed request is in the ledger (mcp-guard log); serve's log
	// names it only at debug level ($MCP_GUARD_LOG=debug): one formatted
	// line per call was a twentieth of serve's CPU.
	level := slog.LevelInfo
	if d.Outcome == Allow {
		level = slog.LevelDebug
	}
	if lg := p.log(); lg.Enabled(ctx, level) {
		lg.Log(ctx, level, st.log, "id", id, "server", r.Server, "name", r.Exposed, "decision", d.Outcome.String(), "rule", d.Rule, "class", string(d.Class), "reason", d.Reason, "limit", d.Limit)
	}
	if d.Outcome != Allow {
		msg := fmt.Sprintf("%s (ledger call %d)", d.Message, id)
		if r.Kind.client() {
			msg = d.Message
		}
		return Result{Status: Refused, Decision: d, CallID: id, Message: msg}
	}
	return p.forward(ctx, r, fwd, id, d)
}

// maxLabelChecks bounds how often a call's commit finds its scope's labels
// changed before the call is not made: each time, it is decided again on
// the labels the commit read.
const maxLabelChecks = 4

// reflow is d, an allowed request whose commit found its scope holding
// held, not the labels it was decided on, decided by the flow stage on
// held. A request the session counted that a flow now denies is taken out
// of the session's count, as if it had been refused when it was decided
// (Session.uncount).
func (p *Pipeline) reflow(r *Request, d Decision, held []ledger.Label) Decision {
	d = p.flowsOn(r, d, held, nil)
	d.checkLabels, d.labelsRead = d.Outcome == Allow, held
	if d.Outcome != Allow && d.Outcome != Ask {
		d = r.Session.uncount(d)
	}
	return d
}

// current is the exposure stage: the item the host names is still the one
// it was shown (its pin unchanged since the host's list). A request for
// one that changed is recorded as unknown and refused.
func (p *Pipeline) current(ctx context.Context, r *Request) bool {
	if p.isCurrent(r) {
		return true
	}
	if id, start, err := p.Refuse(ctx, p.Shown.withdrawn(r)); err != nil {
		p.log().Error("refused request not recorded", "name", r.Exposed, "err", err)
	} else {
		p.log().Warn("refused: withdrawn since the host's list", "id", id, "name", r.Exposed, "reason", start.Reason)
	}
	return false
}

// decided runs the stages that decide r: strict reading, the rules and
// predicates, the pinned schema, flows, the session's limits, then L7,
// read from the ledger as it is now. Explain decides with it; Run decides
// the same, with L7 asked in the call's commit (IfNotInterrupted).
func (p *Pipeline) decided(ctx context.Context, r *Request) Decision {
	d := p.decide(ctx, r, false)
	if l7Applies(r, d) {
		again, err := p.Ledger.WasInterrupted(context.WithoutCancel(ctx), r.Server, r.Name, r.Args)
		if err != nil || again {
			d = interruptedAsk(d, err)
		}
	}
	return d
}

// isCurrent reports whether what r names is still exposed under the pin
// the host was shown.
func (p *Pipeline) isCurrent(r *Request) bool {
	if p.Shown == nil {
		return true
	}
	now, ok := p.Shown.pinOf(r)
	return ok && now == r.PinDigest
}

// decide is strict reading, the rules and predicates, the pinned schema,
// the flow stage and the session's limits, for each kind. A flow's refusal
// counts as the session's refusal, as a rule's does (and as explain's
// replay of the ledger counts it); a flow's ask as an ask.
//
// With known, the flow stage may decide on the labels this process knows,
// which the commit then checks (flows); Run's commit does, Explain has
// none.
func (p *Pipeline) decide(ctx context.Context, r *Request, known bool) Decision {
	switch r.Kind {
	case KindTool:
		g := r.Session.g
		return r.Session.decide(r.Server+"/"+r.Name, r.Args, func() Decision {
			if d, refused := p.secretArgs(r); refused {
				return d
			}
			return p.flows(ctx, r, g.Decide(r.Server, r.Name, r.Schema, r.Args), known)
		})
	case KindPrompt:
		g := r.Session.g
		return r.Session.decide(PromptName(r.Server, r.Name), r.Args, func() Decision {
			if d, refused := p.secretArgs(r); refused {
				return d
			}
			return p.flows(ctx, r, g.DecidePrompt(r.Server, r.Name, r.Args), known)
		})
	case KindResource:
		g := r.Session.g
		return r.Session.decide(ResourceName(r.Server, r.Name), nil, func() Decision {
			return p.flows(ctx, r, g.DecideResource(r.Server, r.Name), known)
		})
	case KindSubscribe:
		return p.Gate.DecideResource(r.Server, r.Name)
	}
	return p.Gate.decideClient(r)
}

// decideClient decides an upstream's request of the host by the server's
// config (ClientAccess), then reads its params strictly.
func (g *Gate) decideClient(r *Request) Decision {
	d := Decision{Outcome: Allow, Stage: StageConfig, Reason: "allowed by the server's config"}
	ask := false
	switch g.ClientAccess(r.Server).Of(r.Name) {
	case config.AccessDeny:
		why := "the server's config does not allow " + r.Name
		d.Outcome, d.Reason, d.Message = Deny, why, why
		return d
	case config.AccessAsk:
		ask = true
		d.Outcome, d.Reason, d.Class = Ask, "the server's config says ask", classify.Class(kinds[r.Kind].ledgerKind)
	}
	if r.Refuse != nil {
		d.Outcome, d.Reason, d.Message = Deny, r.Refuse.Error(), r.Refuse.Error()
		return d
	}
	if r.Kind == KindRoots {
		// The answer is the configured list whatever the params say: they
		// are recorded, never read or passed on.
		return d
	}
	if !Recordable(r.Args) && ask {
		d.Outcome, d.Stage, d.Reason = Invalid, StageReading, "params are not strict JSON or nest too deep to record"
		d.Message = "mcp-guard: " + r.Name + ": the params are not strict JSON or nest too deep to record, so they cannot be shown to the operator"
		return d
	}
	if e := FoldCollision(r.Args); e != nil {
		d.Outcome, d.Stage, d.Reason = Invalid, StageReading, "params "+e.Error()
		d.Message = "mcp-guard: " + r.Name + ": params refused: " + e.Error()
	}
	return d
}

// l7Applies reports whether L7 asks of r decided as d: an allowed request
// of a kind it covers, to a tool not classified read. If an identical call
// was interrupted by a crash, whether it ran is unknown and running it
// again is the operator's decision (interruptedAsk).
func l7Applies(r *Request, d Decision) bool {
	return kinds[r.Kind].interrupted && d.Outcome == Allow && d.Class != "read"
}

// interruptedAsk is d turned into L7's ask; err, if the ledger could not
// say, is the reason.
func interruptedAsk(d Decision, err error) Decision {
	d.Outcome, d.Stage = Ask, StageInterrupted
	d.Reason = "the identical call was interrupted by a crash; the operator decides whether it runs again"
	if err != nil {
		d.Reason = "could not check for an interrupted identical call: " + err.Error()
	}
	return d
}

// callStart is what the commit records for r decided as d. Arguments
// that cannot be read as one meaning are kept verbatim, out of band.
func (p *Pipeline) callStart(r *Request, d *Decision) ledger.CallStart {
	st := &kinds[r.Kind]
	start := ledger.CallStart{
		Kind:      st.ledgerKind,
		SessionID: r.SessionID,
		Server:    r.Server,
		Tool:      r.Name,
		Exposed:   r.Exposed,
		PinDigest: r.PinDigest,
		Decision:  d.Outcome.String(),
		Rule:      d.Rule,
		Class:     string(d.Class),
		Reason:    d.Reason,
		// The label set a flow's ask binds (a grant needs the same).
		FlowLabels: d.FlowLabels,
	}
	switch {
	case r.Kind == KindResource:
		args, err := resourceArgs(r.Name)
		if err != nil {
			d.Outcome, d.Stage, d.Message = Invalid, StageRecord, fmt.Sprintf("mcp-guard: %s refused: the URI cannot be recorded: %v", r.Exposed, err)
			start.Decision, start.Reason, start.ArgsInvalid = d.Outcome.String(), "uri: "+err.Error(), []byte(r.Name)
		} else {
			start.Args = args
		}
	case r.Kind.client():
		start.Exposed, start.PinDigest = "", ""
		if Recordable(r.Args) {
			start.Args = r.Args
		} else {
			start.ArgsInvalid = r.Args
		}
	case d.Stage == StageSecrets:
		// T1: recorded with the credential redacted, never its value
		if red := p.redactedArgs(r.Args); Recordable(red) {
			start.Args = red
		} else {
			start.ArgsInvalid = red
		}
	case d.Outcome == Invalid:
		start.ArgsInvalid = p.redactedArgs(r.Args) // kept out of band, never as arguments; redacted
	default:
		start.Args, start.ArgsDigested = r.Args, d.Args
	}
	return start
}

// commit records a decided request, on a context that outlives the host's
// cancellation.
func (p *Pipeline) commit(ctx context.Context, start ledger.CallStart) (int64, error) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), RecordTimeout)
	defer cancel()
	return p.Ledger.RecordCall(rctx, start)
}

// notMade is the message for a request not made because of why.
func (p *Pipeline) notMade(r *Request, why string) string {
	if r.Kind.client() {
		return "the request was not relayed: " + why
	}
	name := r.Server + "/" + r.Name
	switch r.Kind {
	case KindPrompt:
		name = PromptName(r.Server, r.Name)
	case KindResource:
		name = ResourceName(r.Server, r.Name)
	}
	return fmt.Sprintf("mcp-guard: the %s %s: %s", kinds[r.Kind].noun, name, why)
}

// forward sends a recorded, allowed request on and records its outcome
// whatever the host does; a result the outcome stage refuses is recorded
// with the digest of what was sent and not passed on.
func (p *Pipeline) forward(ctx context.Context, r *Request, fwd Forwarder, id int64, d Decision) Result {
	st := &kinds[r.Kind]
	if !st.commit {
		res, err := p.send(ctx, r, fwd, 0, nil)
		if err != nil {
			return Result{Status: Failed, Decision: d, Err: err}
		}
		return Result{Status: Done, Decision: d, Res: res}
	}
	if res, ok := p.witnessed(ctx, r, id, d); !ok {
		return res
	}
	now := p.now()
	began := now()
	var late func(json.RawMessage, error)
	if !r.Kind.client() {
		late = func(res json.RawMessage, err error) {
			p.recordLate(id, OutcomeOf(res, err, now().Sub(began), ""))
		}
	}
	res, err := p.send(ctx, r, fwd, id, late)
	trace.Log(ctx, ledger.TraceStage, "forwarded: the answer is back")
	switch {
	case err != nil && st.cancelled && ctx.Err() != nil && errors.Is(err, ctx.Err()):
		p.recordLazy(id, OutcomeOf(nil, err, now().Sub(began), "cancelled"))
		return Result{Status: Cancelled, Decision: d, CallID: id, Message: fmt.Sprintf("mcp-guard: %s: cancelled by the host", r.Exposed)}
	case err != nil:
		p.recordLazy(id, OutcomeOf(nil, err, now().Sub(began), ""))
		p.log().Warn(st.log+" failed", "id", id, "server", r.Server, "name", r.Exposed, "err", p.redactedText(err.Error()))
		// The server's error reaches the host and may carry what it read.
		d = p.foundLabels(d, errorText(err))
		if gerr := p.gain(ctx, r, id, d); gerr != nil {
			p.log().Error("labels not recorded; the error is not passed on", "id", id, "err", gerr)
			return Result{Status: Replaced, Decision: d, CallID: id, Message: p.notMade(r, "it ran, but the labels its answer brings could not be recorded, so the answer was not passed on")}
		}
		return Result{Status: Failed, Decision: d, CallID: id, Err: err}
	}
	// The outcome is committed off the host's path: the decision is
	// already durable, and a crash before this commit leaves the call
	// "started", which the next start marks interrupted.
	o := OutcomeOf(res, nil, now().Sub(began), "")
	if why, msg := p.refuseResult(r, res, id, o); why != "" {
		o.IsError, o.Err = true, why
		p.recordLazy(id, o)
		p.log().Warn("result not passed on", "id", id, "server", r.Server, "name", r.Exposed, "why", why)
		return Result{Status: Replaced, Decision: d, CallID: id, Message: msg}
	}
	p.recordLazy(id, o)
	// F1: the labels join the scope before the host reads the result.
	d = p.foundLabels(d, res)
	if err := p.gain(ctx, r, id, d); err != nil {
		p.log().Error("labels not recorded; the result is not passed on", "id", id, "err", err)
		return Result{Status: Replaced, Decision: d, CallID: id, Message: p.notMade(r, "it ran, but the labels its result brings could not be recorded, so the result was not passed on")}
	}
	return Result{Status: Done, Decision: d, CallID: id, Res: res}
}

// send is the forward itself: r's exact bytes to its server, or to fwd.
func (p *Pipeline) send(ctx context.Context, r *Request, fwd Forwarder, id int64, late func(json.RawMessage, error)) (json.RawMessage, error) {
	if fwd != nil {
		return fwd.Forward(ctx, id, late)
	}
	if p.Upstreams == nil {
		return nil, fmt.Errorf("mcp-guard: %s: no server to forward it to", r.Exposed)
	}
	u, err := p.Upstreams.Upstream(r.Server)
	if err != nil {
		p.log().Warn(kinds[r.Kind].log+" not forwarded", "id", id, "server", r.Server, "name", r.Exposed)
		return nil, err
	}
	switch r.Kind {
	case KindTool:
		return u.CallTool(ctx, r.Name, r.Args, r.OnProgress, late)
	case KindPrompt:
		return u.GetPrompt(ctx, r.Name, r.Args, late)
	case KindResource:
		return u.ReadResource(ctx, r.Name, late)
	}
	return nil, fmt.Errorf("mcp-guard: %s: a %s request is not sent to a server", r.Exposed, kinds[r.Kind].log)
}

// refuseResult is the outcome stage's check of an answer: the result size
// limit, the pinned outputSchema, J3 on a host's answer. It says why the
// answer is not passed on (for the ledger) and what the receiver reads
// instead, or "" to pass it on.
func (p *Pipeline) refuseResult(r *Request, res json.RawMessage, id int64, o ledger.Outcome) (why, msg string) {
	st := &kinds[r.Kind]
	if st.resultLimit && int64(len(res)) > p.Limits.ResultBytes {
		return fmt.Sprintf("limit: result_bytes: %d bytes over limits.result_bytes (%d); not passed to the host", len(res), p.Limits.ResultBytes),
			fmt.Sprintf("mcp-guard: %s returned %d bytes, over limits.result_bytes (%d); the result was not passed on (ledger call %d, sha256:%s)", r.Exposed, len(res), p.Limits.ResultBytes, id, o.ResultDigest)
	}
	if why := OutputViolation(r.Output, res); why != "" {
		return "output_schema: the result breaks the pinned outputSchema: " + why + "; not passed to the host",
			fmt.Sprintf("mcp-guard: %s returned a result that breaks its pinned outputSchema: %s. It was not passed on (ledger call %d).", r.Exposed, why, id)
	}
	if st.answerFold {
		if e := FoldCollision(res); e != nil {
			// The host's answer would read one way to the gate and the
			// ledger and another to a Go server (J3): it is not relayed.
			msg := "mcp-guard: the host's answer to " + r.Name + " was refused: " + e.Error()
			return msg, msg
		}
	}
	return "", ""
}

func (p *Pipeline) now() func() time.Time {
	if p.Now != nil {
		return p.Now
	}
	return time.Now
}

func (p *Pipeline) log() *slog.Logger {
	if p.Log != nil {
		return p.Log
	}
	return slog.New(slog.DiscardHandler)
}

// recordLazy queues a request's outcome without waiting for its commit; it
// is in the ledger's queue before the host hears the answer, and no host
// cancellation can take it out.
func (p *Pipeline) recordLazy(id int64, o ledger.Outcome) {
	o.Err = p.redactedText(o.Err)
	log := p.log()
	p.Ledger.RecordOutcomeLazy(id, o, func(err error) {
		if err != nil {
			log.Error("call outcome not recorded", "id", id, "err", err)
		}
	})
}

// recordLate records what the upstream answered after the host gave up, on
// a context of its own.
func (p *Pipeline) recordLate(id int64, o ledger.Outcome) {
	o.Err = p.redactedText(o.Err)
	ctx, cancel := context.WithTimeout(context.Background(), RecordTimeout)
	defer cancel()
	if err := p.Ledger.RecordLateOutcome(ctx, id, o); err != nil {
		p.log().Error("late call outcome not recorded", "id", id, "err", err)
	}
}
