package classify

import (
	"errors"
	"fmt"
	"slices"
)

// Rule is one operator rule, as written in the config. It names exactly one
// of Tool, Prompt and Resource: it is a tool rule, a prompt rule or a
// resource rule (see "Prompts and resources" in the package doc).
type Rule struct {
	// Server and Tool are globs over the server name and the upstream tool
	// name (path.Match syntax; see the package doc).
	Server string `toml:"server"`
	Tool   string `toml:"tool"`
	// Prompt is a glob over the upstream prompt name.
	Prompt string `toml:"prompt"`
	// Resource is a pattern over a resource URI (see the package doc).
	Resource string `toml:"resource"`
	Class    Class  `toml:"class"`
	Action   Action `toml:"action"`
	// Reason is told to the model and recorded when the rule decides.
	Reason string `toml:"reason"`
	// When maps JSON pointers ("/path", "/a/0/b"; "" is the whole
	// document) to predicates that must all hold.
	When map[string]Predicate `toml:"when"`
	// Labels join the host's scope when a request this rule allows
	// returns its result to the host (see "Labels and flows").
	Labels []string `toml:"labels"`
}

// Rules is a compiled rule list. It is immutable and safe for concurrent use.
// The zero value and nil hold no rules: nothing is exposable, nothing decided.
type Rules struct {
	rules []compiledRule
}

type compiledRule struct {
	kind         ruleKind
	server, name *glob       // name: the tool or prompt glob (nil for resource rules)
	uri          *uriPattern // resource rules only
	class        Class
	action       Action
	reason       string
	labels       []string // sorted, unique
	when         []pred   // sorted by pointer text
}

// Match is the rule that decided, and what it decided.
type Match struct {
	Rule   int // 1-based index into the list given to Compile
	Class  Class
	Action Action
	Reason string
	// Labels are the rule's labels, sorted; nil for none. The slice is
	// shared: do not change it.
	Labels []string
}

// Compile validates and compiles rules. Its error, if any, joins every
// problem found (errors.Join), each located as rule[N].field with N 1-based.
func Compile(rules []Rule) (*Rules, error) {
	out := &Rules{rules: make([]compiledRule, 0, len(rules))}
	var errs []error
	for i, r := range rules {
		loc := fmt.Sprintf("rule[%d]", i+1)
		bad := func(field string, err error) {
			errs = append(errs, fmt.Errorf("%s.%s: %w", loc, field, err))
		}
		var c compiledRule
		c.server = compileName(r.Server, "server", bad)
		c.kind = compileTarget(r, &c, bad)
		var err error
		if c.kind == kindTool {
			if c.class, err = ParseClass(string(r.Class)); err != nil {
				bad("class", err)
			}
		} else {
			c.class = contentClass(r, bad)
		}
		if c.action, err = ParseAction(string(r.Action)); err != nil {
			bad("action", err)
		} else if c.kind != kindTool && c.action == Ask {
			bad("action", fmt.Errorf(`"ask" is for tool rules only: a %s rule allows or denies`, c.kind))
		}
		if c.kind == kindResource && len(r.When) > 0 {
			bad("when", errors.New("a resource rule has no when: its URI pattern is the condition"))
		}
		c.reason = r.Reason
		c.labels = compileLabels(r.Labels, bad)
		ptrs := make([]string, 0, len(r.When))
		for p := range r.When {
			ptrs = append(ptrs, p)
		}
		slices.Sort(ptrs)
		for _, p := range ptrs {
			cp, err := compilePred(p, r.When[p])
			if err != nil {
				bad(fmt.Sprintf("when.%q", p), err)
				continue
			}
			c.when = append(c.when, cp)
		}
		out.rules = append(out.rules, c)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

func compileName(pattern, field string, bad func(string, error)) *glob {
	if pattern == "" {
		bad(field, errors.New(`empty (write "*" to match any name)`))
		return nil
	}
	g, err := compileGlob(pattern)
	if err != nil {
		bad(field, fmt.Errorf("bad glob %q: %w", pattern, err))
		return nil
	}
	return g
}

// Len returns the number of rules.
func (r *Rules) Len() int {
	if r == nil {
		return 0
	}
	return len(r.rules)
}

func (c *compiledRule) match(i int) Match {
	return Match{Rule: i + 1, Class: c.class, Action: c.action, Reason: c.reason, Labels: c.labels}
}

// Exposable reports the first tool rule whose server and tool globs match,
// ignoring When. A tool for which this is false must never be shown to the
// host.
func (r *Rules) Exposable(server, tool string) (Match, bool) {
	return r.exposable(kindTool, server, tool)
}

func (r *Rules) exposable(kind ruleKind, server, name string) (Match, bool) {
	if r == nil {
		return Match{}, false
	}
	for i := range r.rules {
		c := &r.rules[i]
		if c.kind == kind && c.server.match(server) && c.name.match(name) {
			return c.match(i), true
		}
	}
	return Match{}, false
}

// Decide returns the first tool rule, in order, whose server glob, tool glob
// and When predicates all hold for args (decoded with
// json.Decoder.UseNumber; see the package doc). ok is false when no rule
// matches: the caller fails closed.
func (r *Rules) Decide(server, tool string, args any) (Match, bool) {
	m, ok, _ := r.decide(kindTool, server, tool, args, false)
	return m, ok
}

// Step is one rule's outcome in Explain.
type Step struct {
	Rule int // 1-based
	// Why the rule did not match, e.g. `tool glob "read_*"` or
	// `when "/path" (path): no match`; "" for the rule that matched. It
	// never quotes the arguments.
	Why string
}

// Explain is Decide, plus one Step for each tool rule tried, in order, the
// deciding rule last.
func (r *Rules) Explain(server, tool string, args any) (Match, bool, []Step) {
	return r.decide(kindTool, server, tool, args, true)
}

var predNames = [...]string{
	pEquals: "equals", pOneOf: "one_of", pPrefix: "prefix", pGlob: "glob",
	pRegex: "regex", pPath: "path", pMaxLength: "max_length", pAbsent: "absent",
}

func (r *Rules) decide(kind ruleKind, server, name string, args any, trace bool) (Match, bool, []Step) {
	if r == nil {
		return Match{}, false, nil
	}
	var steps []Step
	miss := func(i int, format string, a ...any) {
		steps = append(steps, Step{Rule: i + 1, Why: fmt.Sprintf(format, a...)})
	}
rules:
	for i := range r.rules {
		c := &r.rules[i]
		if c.kind != kind {
			continue
		}
		if !c.server.match(server) {
			if trace {
				miss(i, "server glob %q", c.server.src)
			}
			continue
		}
		if !c.name.match(name) {
			if trace {
				miss(i, "%s glob %q", kind, c.name.src)
			}
			continue
		}
		for j := range c.when {
			p := &c.when[j]
			if ok, why := p.eval(args); !ok {
				if trace {
					miss(i, "when %q (%s): %s", p.ptr.src, predNames[p.kind], why)
				}
				continue rules
			}
		}
		if trace {
			steps = append(steps, Step{Rule: i + 1})
		}
		return c.match(i), true, steps
	}
	return Match{}, false, steps
}
