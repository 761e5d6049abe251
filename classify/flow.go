package classify

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// Secret is the reserved label: its flow to network and exec denies unless
// an explicit flow from it says otherwise.
const Secret = "secret"

// Flow is one [[flow]]: once a scope holds From, a request of a class in
// To gets Action (ask or deny), with Reason.
type Flow struct {
	From   string  `toml:"from"`
	To     []Class `toml:"to"`
	Action Action  `toml:"action"`
	Reason string  `toml:"reason"`
}

// Why a flow is in force.
const (
	FlowWritten  = "config"   // a [[flow]] in the config
	FlowDefault  = "default"  // a default, because the config has no [[flow]] and no flows = []
	FlowReserved = "reserved" // secret -> network, exec: deny, always on
)

// FlowInForce is one flow as the gate applies it.
type FlowInForce struct {
	Flow
	Index  int    // 1-based [[flow]] index; 0 for a default or reserved flow
	Source string // FlowWritten, FlowDefault or FlowReserved
}

// Flows is the compiled flow list. It is immutable and safe for concurrent
// use. A nil *Flows holds only the reserved secret flow.
type Flows struct {
	flows []FlowInForce
	sinks map[Class]bool // classes some flow names
}

// DefaultFlows are the flows in force when the config has no [[flow]] and
// does not turn them off with flows = [].
func DefaultFlows() []Flow {
	return []Flow{
		{From: "private", To: []Class{Network}, Action: Ask, Reason: "private data was read in this session"},
		{From: "untrusted", To: []Class{Exec, Destructive}, Action: Ask, Reason: "untrusted content was read in this session and may carry instructions"},
	}
}

// reservedFlow is secret's flow, on unless a written flow starts from secret.
func reservedFlow() Flow {
	return Flow{From: Secret, To: []Class{Network, Exec}, Action: Deny, Reason: "a secret was read in this session"}
}

var labelRE = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,31}$`)

// ValidLabel reports whether s can name a label: 1-32 lowercase letters,
// digits, '_' or '-', starting with a letter.
func ValidLabel(s string) bool { return labelRE.MatchString(s) }

// checkLabel says what is wrong with a label name, or nil.
func checkLabel(s string) error {
	if !ValidLabel(s) {
		return fmt.Errorf("%q: a label is 1-32 lowercase letters, digits, '_' or '-', starting with a letter", s)
	}
	return nil
}

// compileLabels checks a rule's labels and returns them sorted, unique.
func compileLabels(labels []string, bad func(string, error)) []string {
	if labels == nil {
		return nil
	}
	if len(labels) == 0 {
		bad("labels", errors.New("empty: leave labels out for none"))
		return nil
	}
	out := make([]string, 0, len(labels))
	for _, l := range labels {
		if err := checkLabel(l); err != nil {
			bad("labels", err)
			continue
		}
		out = append(out, l)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// CompileFlows validates written flows and returns the flows in force.
// written is every [[flow]] in the config; off is flows = []. With neither,
// DefaultFlows hold. The reserved secret flow holds unless a written flow
// starts from secret. The error joins every problem, each located as
// flow[N].field.
func CompileFlows(written []Flow, off bool) (*Flows, error) {
	var errs []error
	f := &Flows{sinks: map[Class]bool{}}
	if off && len(written) > 0 {
		errs = append(errs, errors.New("flows: flows = [] turns every flow off, and the config also has [[flow]]; keep one of them"))
	}
	secretWritten := false
	for i, w := range written {
		loc := fmt.Sprintf("flow[%d]", i+1)
		bad := func(field string, err error) { errs = append(errs, fmt.Errorf("%s.%s: %w", loc, field, err)) }
		if w.From == "" {
			bad("from", errors.New("missing: name the label, e.g. \"private\""))
		} else if err := checkLabel(w.From); err != nil {
			bad("from", err)
		}
		if w.From == Secret {
			secretWritten = true
		}
		if len(w.To) == 0 {
			bad("to", errors.New("missing: name the classes it applies to, e.g. [\"network\"]"))
		}
		to := make([]Class, 0, len(w.To))
		for _, c := range w.To {
			if _, err := ParseClass(string(c)); err != nil {
				bad("to", err)
				continue
			}
			to = append(to, c)
		}
		slices.Sort(to)
		to = slices.Compact(to)
		switch w.Action {
		case Ask, Deny:
		case Allow:
			bad("action", errors.New(`"allow": a flow only makes a decision stricter; want ask or deny (to let a label through, leave its flow out)`))
		case "":
			bad("action", errors.New("missing: want ask or deny"))
		default:
			bad("action", fmt.Errorf("unknown action %q (want ask or deny)", w.Action))
		}
		f.add(FlowInForce{Flow: Flow{From: w.From, To: to, Action: w.Action, Reason: w.Reason}, Index: i + 1, Source: FlowWritten})
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if len(written) == 0 && !off {
		for _, d := range DefaultFlows() {
			f.add(FlowInForce{Flow: d, Source: FlowDefault})
		}
	}
	if !secretWritten {
		f.add(FlowInForce{Flow: reservedFlow(), Source: FlowReserved})
	}
	return f, nil
}

func (f *Flows) add(fl FlowInForce) {
	f.flows = append(f.flows, fl)
	for _, c := range fl.To {
		f.sinks[c] = true
	}
}

// reserved is what a nil *Flows holds.
func reserved() *Flows {
	f := &Flows{sinks: map[Class]bool{}}
	f.add(FlowInForce{Flow: reservedFlow(), Source: FlowReserved})
	return f
}

// InForce lists the flows in force, written ones first in config order.
func (f *Flows) InForce() []FlowInForce {
	if f == nil {
		f = reserved()
	}
	return slices.Clone(f.flows)
}

// Defaults reports whether the default flows are in force (the config has
// no [[flow]] and no flows = []).
func (f *Flows) Defaults() bool {
	if f == nil {
		return false
	}
	for _, fl := range f.flows {
		if fl.Source == FlowDefault {
			return true
		}
	}
	return false
}

// Sink reports whether some flow names class c: only then do a scope's
// labels matter to a request of that class.
func (f *Flows) Sink(c Class) bool {
	if f == nil {
		return c == Network || c == Exec
	}
	return f.sinks[c]
}

// FlowMatch is the flow that decided: the strictest flow whose From the
// scope holds and whose To names the class.
type FlowMatch struct {
	FlowInForce
	Label string // the held label it matched (From)
	// Labels are every held label some flow to this class names, sorted:
	// what an approval given for the flow is bound to.
	Labels []string
}

// Check returns the strictest flow for a request of class c in a scope
// holding labels (deny over ask; a tie keeps the first in force). ok is
// false when no flow applies.
func (f *Flows) Check(labels []string, c Class) (FlowMatch, bool) {
	if f == nil {
		f = reserved()
	}
	var best FlowMatch
	found := false
	var named []string
	for _, fl := range f.flows {
		if !slices.Contains(fl.To, c) || !slices.Contains(labels, fl.From) {
			continue
		}
		named = append(named, fl.From)
		if !found || severity(fl.Action) > severity(best.Action) {
			best, found = FlowMatch{FlowInForce: fl, Label: fl.From}, true
		}
	}
	if !found {
		return FlowMatch{}, false
	}
	slices.Sort(named)
	best.Labels = slices.Compact(named)
	return best, true
}

// String is the flow as check prints it: "private -> network: ask (private
// data was read in this session)".
func (f Flow) String() string {
	to := make([]string, len(f.To))
	for i, c := range f.To {
		to[i] = string(c)
	}
	s := fmt.Sprintf("%s -> %s: %s", f.From, strings.Join(to, ", "), f.Action)
	if f.Reason != "" {
		s += " (" + f.Reason + ")"
	}
	return s
}
