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
	"github.com/mcp-guard/mcp-guard/pin"
)

// cmdExplain shows, without calling anything, the decision a call would get
// and why: the pin, the schema verdict, each rule tried, the limits. Exit 0
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

	// Pin and schema.
	var schema *pin.Schema
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
		if pn.Digest != "" {
			t, err := pin.ParseTool(pn.Raw)
			if err == nil {
				schema, err = pin.CompileSchema(t.InputSchema, pin.SchemaLimits{})
			}
			if err != nil {
				fmt.Fprintf(w, "schema  refused: %s\n", safetext.Show(err.Error(), 400))
			}
		}
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

	d := newGate(cfg).Decide(server, tool, schema, []byte(argText))
	if pn.State != ledger.PinPinned && d.Outcome == gate.Allow {
		d = gate.Decision{Outcome: gate.Refuse, Message: "the tool is not exposed: its pin is " + pn.State}
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
