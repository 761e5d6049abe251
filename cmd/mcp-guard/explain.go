package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/mcp-guard/mcp-guard/config"
	"github.com/mcp-guard/mcp-guard/gate"
	"github.com/mcp-guard/mcp-guard/internal/canon"
	"github.com/mcp-guard/mcp-guard/internal/safetext"
	"github.com/mcp-guard/mcp-guard/ledger"
	"github.com/mcp-guard/mcp-guard/proxy"
)

// cmdExplain shows, without calling anything, the decision a call would get
// and why: the pin, whether the host is shown the tool (the view serve
// computes, from the pins), the schema verdict, each rule tried, the limits. Exit 0
// when it would be allowed, 1 when it would not.
func cmdExplain(args []string, c cli) error {
	fs := newFlagSet("explain")
	cfgPath := fs.String("config", "", "config file")
	var target, argText string
	var rest []string
	for _, a := range args { // positional arguments may come before or after flags
		if strings.HasPrefix(a, "-") || (len(rest) > 0 && rest[len(rest)-1] == "--config") {
			rest = append(rest, a)
		} else if target == "" {
			target = a
		} else if argText == "" {
			argText = a
		} else {
			return usageErr("explain: unexpected argument %q", a)
		}
	}
	if err := fs.Parse(rest); err != nil {
		return usageErr("explain: %v", err)
	}
	server, tool, ok := strings.Cut(target, "/")
	if !ok || server == "" || tool == "" {
		return usageErr("explain: want SERVER/TOOL 'ARGS-JSON', e.g. mcp-guard explain fs/read_file '{\"path\":\"/tmp/x\"}'")
	}
	if argText == "" {
		argText = "{}"
	}
	p, err := configPath(*cfgPath, c.env)
	if err != nil {
		return usageErr("explain: %v", err)
	}
	cfg, err := config.Load(p, c.env)
	if err != nil {
		return err
	}
	ctx := context.Background()
	led, err := ledger.Open(ctx, cfg.Ledger.Path, ledger.Options{})
	if err != nil {
		return err
	}
	defer led.Close()
	w := c.stdout
	fmt.Fprintf(w, "call    %s %s\n", safetext.Show(target, 200), safetext.Show(argText, 400))

	// Pin, and what the host would be shown: the view serve computes, with
	// the pins standing in for the listings (no upstream is started).
	pn, err := led.Pin(ctx, server, tool)
	switch {
	case errors.Is(err, ledger.ErrNotFound):
		fmt.Fprintf(w, "pin     none: no serve has listed %s yet; its calls are refused until it is pinned\n", safetext.Show(target, 200))
	case err != nil:
		return err
	default:
		fmt.Fprintf(w, "pin     %s", pn.State)
		if pn.Digest != "" {
			fmt.Fprintf(w, " sha256:%s", pn.Digest)
		}
		if pn.State != ledger.PinPinned {
			fmt.Fprintf(w, " (withdrawn: see mcp-guard pin diff %s)", safetext.Show(target, 200))
		}
		fmt.Fprintln(w)
	}
	pins, err := led.Pins(ctx, "")
	if err != nil {
		return err
	}
	servers := make([]string, len(cfg.Servers))
	for i, s := range cfg.Servers {
		servers[i] = s.Name
	}
	g := newGate(cfg)
	shown, schema, listed := proxy.ToolFromPins(servers, pins, g, server, tool)
	withheld := ""
	switch {
	case !listed:
		withheld = "no serve has listed it"
	case shown.Exposed == "":
		withheld = shown.Hidden
		fmt.Fprintf(w, "exposed no: %s\n", safetext.Show(withheld, 600))
	default:
		fmt.Fprintf(w, "exposed as %s\n", safetext.Show(shown.Exposed, 200))
	}
	doc, derr := canon.Decode([]byte(argText))
	switch {
	case derr != nil:
		fmt.Fprintf(w, "args    not strict JSON: %s\n", safetext.Show(derr.Error(), 400))
	case schema != nil:
		if err := schema.Validate(doc); err != nil {
			fmt.Fprintf(w, "schema  %s\n", safetext.Show(err.Error(), 600))
		} else {
			fmt.Fprintln(w, "schema  the arguments match the pinned inputSchema")
		}
	}

	// Rules, each tried in order.
	if derr == nil {
		lines := ruleLines(cfg.Path())
		_, _, steps := cfg.CompiledRules().Explain(server, tool, doc)
		for _, s := range steps {
			at := ""
			if l, ok := lines[s.Rule]; ok {
				at = fmt.Sprintf(" (%s:%d)", cfg.Path(), l)
			}
			if s.Why == "" {
				r := cfg.Rules[s.Rule-1]
				fmt.Fprintf(w, "rule    %d%s matches: class %s, action %s", s.Rule, at, r.Class, r.Action)
				if r.Reason != "" {
					fmt.Fprintf(w, ", reason %q", r.Reason)
				}
				fmt.Fprintln(w)
			} else {
				fmt.Fprintf(w, "rule    %d%s does not match: %s\n", s.Rule, at, s.Why)
			}
		}
		if len(steps) == 0 || steps[len(steps)-1].Why != "" {
			fmt.Fprintln(w, "rule    none matches: the call is denied")
		}
	}
	l := cfg.LimitsInForce()
	fmt.Fprintf(w, "limits  calls_per_session %d, calls_per_tool_per_minute %d, identical_call_repeats %d, consecutive_denials %d, result_bytes %d, call_timeout %s\n",
		l.CallsPerSession, l.CallsPerToolPerMinute, l.IdenticalCallRepeats, l.ConsecutiveDenials, l.ResultBytes, l.CallTimeout)

	d := g.Decide(server, tool, schema, []byte(argText))
	if withheld != "" {
		// serve answers a name it does not show with -32602 before any rule.
		d = gate.Decision{Outcome: gate.Refuse, Message: "the tool is not exposed: " + withheld}
	}
	fmt.Fprintf(w, "decision %s", d.Outcome)
	if d.Message != "" {
		fmt.Fprintf(w, ": %s", safetext.Show(d.Message, 600))
	}
	fmt.Fprintln(w)
	if d.Outcome != gate.Allow {
		return &exitError{code: 1, err: fmt.Errorf("explain: %s would not be forwarded (%s)", safetext.Show(target, 200), d.Outcome)}
	}
	return nil
}

// ruleLines maps each rule's 1-based index to the line of its [[rule]]
// header in the config file (best effort: rules written another way have
// no line).
func ruleLines(path string) map[int]int {
	out := map[int]int{}
	src, err := os.ReadFile(path)
	if err != nil {
		return out
	}
	n := 0
	for i, line := range strings.Split(string(src), "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "[[rule]]") {
			n++
			out[n] = i + 1
		}
	}
	return out
}
