package gate

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/mcp-guard/mcp-guard/classify"
	"github.com/mcp-guard/mcp-guard/internal/safetext"
	"github.com/mcp-guard/mcp-guard/ledger"
)

// maxSinceArgs bounds the arguments a flow's message quotes of the call
// that brought a label.
const maxSinceArgs = 200

// unionLabels is a ∪ b, sorted.
func unionLabels(a, b []string) []string {
	if len(b) == 0 {
		return a
	}
	out := append(slices.Clone(a), b...)
	slices.Sort(out)
	return slices.Compact(out)
}

// scopeLabels is what the flow stage reads when it does not decide on the
// labels the process knows: the labels r names (explain --labels), else
// its scope's, read from the ledger now, so every process serving the
// host sees the others' labels.
func (p *Pipeline) scopeLabels(ctx context.Context, r *Request) ([]ledger.Label, error) {
	if r.Labels != nil {
		return *r.Labels, nil
	}
	if r.Scope == "" {
		return nil, nil
	}
	return p.Ledger.ScopeLabels(context.WithoutCancel(ctx), r.Scope)
}

// flows is the flow stage: a request the rules allow or ask for, of a
// class some flow names, in a scope holding a label that flow starts from,
// gets the stricter of its decision and every such flow's action. The
// decision says which labels, since which call; an ask is bound to that
// label set (Decision.FlowLabels). A scope whose labels cannot be read is
// refused: the stage fails closed.
//
// With known, an allowed request may be decided on the labels this process
// knows (ledger.KnownScopeLabels), which can lag another process's commit:
// only when no flow applies to them, and then the call's commit checks
// them (Decision.labelsRead, ledger.CallStart.IfLabels). A flow that applies, or
// a request already asked for, is decided on the labels read now.
func (p *Pipeline) flows(ctx context.Context, r *Request, d Decision, known bool) Decision {
	if d.Outcome != Allow && d.Outcome != Ask {
		return d
	}
	if !p.Gate.Flows().Sink(d.Class) {
		return d
	}
	if known && d.Outcome == Allow && r.Labels == nil && r.Scope != "" {
		held, _, err := p.Ledger.KnownScopeLabels(context.WithoutCancel(ctx), r.Scope)
		if err == nil {
			if _, ok := p.Gate.Flows().Check(labelNames(held), d.Class); !ok {
				d.labelsRead, d.checkLabels = held, true
				return d
			}
		}
	}
	held, err := p.scopeLabels(ctx, r)
	return p.flowsOn(r, d, held, err)
}

// flowsOn is the flow stage deciding d on held, the scope's labels (err:
// they could not be read).
func (p *Pipeline) flowsOn(r *Request, d Decision, held []ledger.Label, err error) Decision {
	flows := p.Gate.Flows()
	name := p.displayName(r)
	if err != nil {
		p.log().Error("scope labels not read; request refused", "scope", r.Scope, "err", err)
		d.Outcome, d.Stage, d.Reason = Refuse, StageFlows, "the scope's labels could not be read"
		d.Message = fmt.Sprintf("mcp-guard: %s %s refused: the labels of this session could not be read from the ledger, so whether a flow applies is unknown", kinds[r.Kind].noun, name)
		return d
	}
	m, ok := flows.Check(labelNames(held), d.Class)
	if !ok {
		return d
	}
	var since, bound []string
	for _, l := range held {
		if slices.Contains(m.Labels, l.Label) {
			since = append(since, Since(l))
			bound = append(bound, l.Label+" since call "+strconv.FormatInt(l.CallID, 10))
		}
	}
	why := fmt.Sprintf("flow %s", m.Flow)
	if m.Index > 0 {
		why = fmt.Sprintf("flow[%d] %s", m.Index, m.Flow)
	}
	d.FlowLabels = strings.Join(bound, ", ")
	sinceText := strings.Join(since, "; ")
	d.flowWhy = fmt.Sprintf("this session holds %s (%s), and %s.", strings.Join(m.Labels, ", "), sinceText, flowText(m))
	switch {
	case m.Action == classify.Deny:
		d.Outcome, d.Stage = Deny, StageFlows
		d.Reason = why + "; " + sinceText
		d.Message = fmt.Sprintf("mcp-guard: %s %s denied: this session holds %s (%s), and %s", kinds[r.Kind].noun, name, strings.Join(m.Labels, ", "), sinceText, flowText(m))
	case d.Outcome == Allow:
		d.Outcome, d.Stage = Ask, StageFlows
		d.Reason = why + "; " + sinceText
		d.Message = fmt.Sprintf("mcp-guard: %s %s needs the operator's approval: this session holds %s (%s), and %s", kinds[r.Kind].noun, name, strings.Join(m.Labels, ", "), sinceText, flowText(m))
	default: // the rule asks already: the ask is also the flow's
		d.Reason = strings.TrimSpace(d.Reason+"; ") + why + "; " + sinceText
		d.Message += fmt.Sprintf("; this session holds %s (%s)", strings.Join(m.Labels, ", "), sinceText)
	}
	return d
}

// labelNames is the names of held.
func labelNames(held []ledger.Label) []string {
	names := make([]string, len(held))
	for i, l := range held {
		names[i] = l.Label
	}
	return names
}

// flowText says what the flow does, for a message.
func flowText(m classify.FlowMatch) string {
	to := make([]string, len(m.Flow.To))
	for i, c := range m.Flow.To {
		to[i] = string(c)
	}
	how := "only with the operator's approval"
	if m.Action == classify.Deny {
		how = "never"
	}
	s := fmt.Sprintf("%s goes to %s calls %s", m.From, strings.Join(to, ", "), how)
	if m.Reason != "" {
		s += " (" + m.Reason + ")"
	}
	return s
}

// Since names the call that brought a label: `private since call 12:
// fs/read_file {"path":"/home/me/notes/taxes.md"}`, its arguments escaped
// and cut.
func Since(l ledger.Label) string {
	if l.CallID == 0 {
		return l.Label + " (given, not read)"
	}
	name := l.Server + "/" + l.Tool
	switch l.Kind {
	case ledger.KindPrompt:
		name = PromptName(l.Server, l.Tool)
	case ledger.KindResource:
		name = ResourceName(l.Server, l.Tool)
	}
	s := fmt.Sprintf("%s since call %d: %s", l.Label, l.CallID, safetext.Show(name, 120))
	if len(l.Args) > 0 && l.Kind != ledger.KindResource {
		s += " " + safetext.Show(string(l.Args), maxSinceArgs)
	}
	return s
}

// displayName is how a flow's message names r.
func (p *Pipeline) displayName(r *Request) string {
	switch r.Kind {
	case KindPrompt:
		return PromptName(r.Server, r.Name)
	case KindResource:
		return ResourceName(r.Server, r.Name)
	}
	return r.Server + "/" + r.Name
}

// gain adds the labels of d's rule to r's scope: the result of call id
// reaches the host. It is committed before the host reads the result.
func (p *Pipeline) gain(ctx context.Context, r *Request, id int64, d Decision) error {
	if len(d.Labels) == 0 || r.Scope == "" {
		return nil
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), RecordTimeout)
	defer cancel()
	gained, err := p.Ledger.GainLabels(rctx, r.Scope, r.SessionID, id, d.Labels)
	if err != nil {
		return err
	}
	if len(gained) > 0 {
		p.log().Info("scope gained labels", "scope", r.Scope, "labels", strings.Join(gained, ","), "call", id)
	}
	return nil
}
