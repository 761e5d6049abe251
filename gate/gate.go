package gate

import (
	"fmt"

	"github.com/mcp-guard/mcp-guard/classify"
	"github.com/mcp-guard/mcp-guard/internal/canon"
	"github.com/mcp-guard/mcp-guard/internal/fspath"
	"github.com/mcp-guard/mcp-guard/ledger"
	"github.com/mcp-guard/mcp-guard/pin"
)

// Outcome is what the gate decided.
type Outcome int

const (
	// Refuse is the zero value: a Decision nobody filled in fails closed.
	Refuse  Outcome = iota
	Allow           // forward the call
	Deny            // an operator rule denies it
	Invalid         // the arguments cannot be read
	Ask             // a rule asks the operator; not available yet
)

func (o Outcome) String() string {
	switch o {
	case Allow:
		return "allow"
	case Deny:
		return "deny"
	case Invalid:
		return "invalid"
	case Ask:
		return "ask"
	default:
		return "refuse"
	}
}

// Stage names the pipeline stage that decided a request, so that explain
// can say which one did (a rule may match a call the schema refuses).
type Stage string

// The stages that decide, in the order a tool call meets them.
const (
	StageReading     Stage = "strict reading" // the arguments or params cannot be read as one meaning
	StageSchema      Stage = "schema"         // the pinned inputSchema (or its absence)
	StageRules       Stage = "rules"          // the operator's rules and predicates
	StageConfig      Stage = "server config"  // a client request: the server's allow_* setting
	StageLimits      Stage = "limits"         // the session's limits
	StageInterrupted Stage = "L7 interrupted" // the identical call was interrupted by a crash
	StageFlows       Stage = "flows"          // a label the host's scope holds, and a flow to the request's class
	StageRecord      Stage = "record"         // the request cannot be recorded as it is
)

// Decision is the gate's answer for one call. Message is what the host (and
// so the model) reads when the call is not forwarded.
type Decision struct {
	Outcome Outcome
	Stage   Stage // the stage that decided
	Rule    int   // 1-based index of the matching rule; 0: none
	Class   classify.Class
	Reason  string
	Limit   string // the limit that ended the call, when one did
	Message string
	// Args is the arguments with their canonical form and digest, when the
	// gate hashed them (an allowed or asked call): the ledger need not read
	// them again.
	Args canon.Digested
	// Labels are what the deciding rule gives: they join the host's scope
	// when the request's result reaches the host.
	Labels []string
	// FlowLabels is set when a flow made the decision stricter (or an ask
	// also a flow's): the labels held, each with the call that brought
	// it, "private since call 12". An approval is bound to it.
	FlowLabels string
	// flowWhy says, for a held request's message, which labels since
	// which calls and which flow made it wait.
	flowWhy string
	// checkLabels: the flow stage decided on labelsRead, the labels this
	// process knew, which the call's commit checks (ledger.CallStart.IfLabels).
	checkLabels bool
	labelsRead  []ledger.Label
	// counted is how the session counted the request, when it did.
	counted *countTicket
}

// Gate decides calls against the operator's rules.
type Gate struct {
	rules *classify.Rules
	// local reports servers that share this machine's filesystem (stdio
	// children): their path arguments are also decided as the kernel will
	// resolve them (fspath.Resolve).
	local   func(server string) bool
	resolve func(string) (string, error)
	flows   *classify.Flows
	access  map[string]ClientAccess // what each server may ask of the host (clientaccess.go)
}

// Option configures a Gate.
type Option func(*Gate)

// LocalServers makes path predicates and file: resource rules on the named
// servers (stdio children, which open paths on this machine) decide both
// the cleaned path and the path resolved through symbolic links as the
// kernel will walk it, keeping the stricter decision.
func LocalServers(names ...string) Option {
	return func(g *Gate) {
		set := map[string]bool{}
		for _, n := range names {
			set[n] = true
		}
		g.local = func(s string) bool { return set[s] }
	}
}

// WithFlows makes the gate apply flows (config.FlowsInForce); without it
// only the reserved secret flow holds.
func WithFlows(f *classify.Flows) Option {
	return func(g *Gate) { g.flows = f }
}

// Flows are the flows the gate applies.
func (g *Gate) Flows() *classify.Flows { return g.flows }

// New returns a gate over compiled rules.
func New(rules *classify.Rules, opts ...Option) *Gate {
	g := &Gate{rules: rules, local: func(string) bool { return false }, resolve: fspath.Resolve}
	for _, o := range opts {
		o(g)
	}
	return g
}

// Exposable reports whether any rule could match calls to server/tool; a tool
// for which it is false is never shown to the host.
func (g *Gate) Exposable(server, tool string) (classify.Match, bool) {
	return g.rules.Exposable(server, tool)
}

// Decide decides one call by its arguments, the pinned schema and the rules,
// without any session's limits (Session.Decide adds them). args are the
// host's argument bytes (nil or empty: no arguments, read as {}); schema is
// the tool's pinned inputSchema.
func (g *Gate) Decide(server, tool string, schema *pin.Schema, args []byte) Decision {
	name := server + "/" + tool
	doc, err := readArgs(args)
	if err != nil {
		return invalidArgs(name, err)
	}
	if err := g.rules.CaseMismatch(server, tool, doc); err != nil {
		return invalidArgs(name, err)
	}
	if schema == nil {
		return Decision{
			Outcome: Refuse,
			Stage:   StageSchema,
			Reason:  "no pinned schema",
			Message: fmt.Sprintf("mcp-guard: call to %s refused: its schema is not pinned", name),
		}
	}
	if err := schema.Validate(doc); err != nil {
		return Decision{
			Outcome: Invalid,
			Stage:   StageSchema,
			Reason:  err.Error(),
			Message: fmt.Sprintf("mcp-guard: call to %s refused: %v", name, err),
		}
	}
	m, ok := g.rules.Decide(server, tool, doc)
	if g.local(server) {
		// Decide again on the paths the server will open, links followed;
		// the stricter decision stands.
		real, err := g.rules.Resolved(server, tool, doc, g.resolve)
		if err != nil {
			return Decision{
				Outcome: Refuse,
				Stage:   StageRules,
				Reason:  "path not resolved: " + err.Error(),
				Message: fmt.Sprintf("mcp-guard: call to %s refused: a path in its arguments could not be resolved (%v)", name, err),
			}
		}
		m2, ok2 := g.rules.Decide(server, tool, real)
		labels := unionLabels(m.Labels, m2.Labels)
		m, ok = classify.Stricter(m, ok, m2, ok2)
		m.Labels = labels
	}
	if !ok {
		return Decision{
			Outcome: Deny,
			Stage:   StageRules,
			Reason:  "no rule matches these arguments",
			Message: fmt.Sprintf("mcp-guard: call to %s denied: no rule allows these arguments", name),
		}
	}
	d := Decision{Stage: StageRules, Rule: m.Rule, Class: m.Class, Reason: m.Reason, Labels: m.Labels}
	switch m.Action {
	case classify.Allow:
		d.Outcome = Allow
	case classify.Deny:
		d.Outcome = Deny
		d.Message = fmt.Sprintf("mcp-guard: call to %s denied by rule %d", name, m.Rule)
		if m.Reason != "" {
			d.Message += ": " + m.Reason
		}
	case classify.Ask:
		d.Outcome = Ask
		d.Message = fmt.Sprintf("mcp-guard: call to %s needs the operator's approval (rule %d)", name, m.Rule)
	default:
		d.Outcome = Refuse
		d.Message = fmt.Sprintf("mcp-guard: call to %s refused: rule %d has an action the gate does not know", name, m.Rule)
	}
	return d
}

// invalidArgs is the refusal of arguments that cannot be read as one
// meaning: they are recorded out of band and never forwarded (G3, J3).
func invalidArgs(name string, err error) Decision {
	return Decision{
		Outcome: Invalid,
		Stage:   StageReading,
		Reason:  "arguments " + err.Error(),
		Message: fmt.Sprintf("mcp-guard: call to %s refused: arguments %v", name, err),
	}
}

// readArgs reads the argument document with the strict reader (J1): it
// must be one JSON object that hashes without loss and that the ledger can
// record (ledger.MaxArgsDepth), and no object in it may hold two member
// names equal under Unicode simple case folding (J3): a rule's predicate
// and the server's decoder would read different members.
func readArgs(args []byte) (map[string]any, error) {
	if len(args) == 0 {
		return map[string]any{}, nil
	}
	v, err := canon.Decode(args)
	if err != nil {
		return nil, fmt.Errorf("are not valid JSON: %v", err)
	}
	if n := canon.Depth(args); n > ledger.MaxArgsDepth {
		return nil, fmt.Errorf("nest %d levels deep; mcp-guard records at most %d", n, ledger.MaxArgsDepth)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("are not a JSON object")
	}
	if e := canon.FoldCollision(obj); e != nil {
		return nil, e
	}
	return obj, nil
}
