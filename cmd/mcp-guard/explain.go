package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/mcp-guard/mcp-guard/classify"
	"github.com/mcp-guard/mcp-guard/config"
	"github.com/mcp-guard/mcp-guard/gate"
	"github.com/mcp-guard/mcp-guard/internal/canon"
	"github.com/mcp-guard/mcp-guard/internal/safetext"
	"github.com/mcp-guard/mcp-guard/ledger"
)

// cmdExplain shows, without calling anything, the decision a call would get
// and why: the pin, whether the host is shown the tool (the view serve
// computes, from the pins), the schema verdict, the limits, each rule tried,
// then serve's pipeline run dry up to its commit (rules, schema, limits, L7):
// the stage that decided ("decided by"), the decision, and what it would
// record. The rule trace is the rules alone: when a stage before or after
// them decided, a rule "would match". With --session ID (or latest, the session of
// the newest call) the session's limits are rebuilt from what the ledger
// holds for it, so the answer is serve's for that session's next call.
// Exit 0 when it would be forwarded, 1 when it would not.
func cmdExplain(args []string, c cli) error {
	fs := newFlagSet("explain")
	cfgPath := fs.String("config", "", "config file")
	sessionID := fs.String("session", "", "decide as the next call of this ledger session (its limits and its scope's labels, from the ledger); latest: the session of the newest call")
	labelList := fs.String("labels", "", "decide as if the session held these labels (comma separated, e.g. private,untrusted)")
	var target, argText string
	var rest []string
	for _, a := range args { // positional arguments may come before or after flags
		if strings.HasPrefix(a, "-") || (len(rest) > 0 && takesValue(rest[len(rest)-1])) {
			rest = append(rest, a)
		} else if target == "" {
			target = a
		} else if argText == "" {
			argText = a
		} else {
			return usageErr("explain: unexpected argument %q", a)
		}
	}
	if err := parseFlags(fs, rest, c); err != nil {
		return err
	}
	server, tool, ok := strings.Cut(target, "/")
	if !ok || server == "" || tool == "" {
		return usageErr("explain: want SERVER/TOOL 'ARGS-JSON' [--session ID|latest], e.g. mcp-guard explain fs/read_file '{\"path\":\"/tmp/x\"}'")
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
	ctx := c.ctx
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
	dry := newDryRun(cfg, led, pins, c.env)
	g := dry.g
	v := dry.view(server, tool)
	schema := v.schema
	switch {
	case !v.listed:
	case v.withheld != "":
		fmt.Fprintf(w, "exposed no: %s\n", safetext.Show(v.withheld, 600))
	default:
		fmt.Fprintf(w, "exposed as %s\n", safetext.Show(v.shown.Exposed, 200))
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

	l := cfg.LimitsInForce()
	fmt.Fprintf(w, "limits  calls_per_session %d, calls_per_tool_per_minute %d, identical_call_repeats %d, consecutive_denials %d, result_bytes %d, call_timeout %s\n",
		l.CallsPerSession, l.CallsPerToolPerMinute, l.IdenticalCallRepeats, l.ConsecutiveDenials, l.ResultBytes, l.CallTimeout)

	// The pipeline up to its commit, as serve runs it for this call: in a
	// fresh session, or in the one named, its limits rebuilt from the ledger.
	sess := g.NewSession(l, nil)
	held := &[]ledger.Label{} // a fresh session holds no labels
	scope := ""
	if *labelList != "" {
		for _, lb := range strings.Split(*labelList, ",") {
			lb = strings.TrimSpace(lb)
			if !classify.ValidLabel(lb) {
				return usageErr("explain: --labels: %q is not a label (1-32 lowercase letters, digits, '_' or '-', starting with a letter)", lb)
			}
			*held = append(*held, ledger.Label{Label: lb})
		}
	}
	if *sessionID != "" {
		id := *sessionID
		if id == "latest" {
			if id, err = led.LatestSession(ctx); errors.Is(err, ledger.ErrNotFound) {
				return fmt.Errorf("explain: --session latest: the ledger %s holds no call yet, so no session to follow; leave out --session", cfg.Ledger.Path)
			} else if err != nil {
				return err
			}
		}
		hist, err := led.SessionHistory(ctx, id)
		if errors.Is(err, ledger.ErrNotFound) {
			return fmt.Errorf("explain: --session %s: no such session in the ledger %s; --session latest follows the session of the newest call", safetext.Show(id, 100), cfg.Ledger.Path)
		} else if err != nil {
			return err
		}
		sess = g.SessionFromHistory(l, nil, hist)
		fmt.Fprintf(w, "session %s: %d recorded steps\n", safetext.Show(id, 100), len(hist))
		if sc, err := led.SessionScope(ctx, id); err == nil && *labelList == "" {
			scope, held = sc, nil // the flow stage reads the scope's labels, as serve does
			ls, err := led.ScopeLabels(ctx, sc)
			if err != nil {
				return err
			}
			fmt.Fprintf(w, "scope   %s: %s\n", safetext.Show(sc, 100), labelSummary(ls))
		} else if err != nil && !errors.Is(err, ledger.ErrNotFound) {
			return err
		}
	}
	if *labelList != "" {
		fmt.Fprintf(w, "labels  %s (given with --labels)\n", safetext.Show(*labelList, 200))
	}
	dc := dry.decide(ctx, sess, server, tool, []byte(argText), scope, held)
	res, start := dc.res, dc.start
	// Rules, each tried in order. The trace is the rules alone: when
	// another stage decided, it says what the rules would have done.
	resolved := false
	if derr == nil {
		byRules := res.Decision.Stage == gate.StageRules && res.Status != gate.Withdrawn
		matches, none := "would match", "rule    none would match: the rules would deny the call"
		if byRules {
			matches, none = "matches", "rule    none matches: the call is denied"
		}
		lines := ruleLines(cfg.Path())
		_, _, steps := cfg.CompiledRules().Explain(server, tool, doc)
		traced := 0 // the rule the trace matches, on the arguments as written
		if len(steps) > 0 && steps[len(steps)-1].Why == "" {
			traced = steps[len(steps)-1].Rule
		}
		if byRules && traced != res.Decision.Rule {
			// The gate decided on the paths the server will open (links
			// followed), and that stricter decision differs from the trace.
			byRules = false
			matches, none = "would match", "rule    none would match the arguments as written"
			resolved = true
		}
		for _, s := range steps {
			at := ""
			if l, ok := lines[s.Rule]; ok {
				at = fmt.Sprintf(" (%s:%d)", cfg.Path(), l)
			}
			if s.Why == "" {
				r := cfg.Rules[s.Rule-1]
				fmt.Fprintf(w, "rule    %d%s %s: class %s, action %s", s.Rule, at, matches, r.Class, r.Action)
				if r.Reason != "" {
					fmt.Fprintf(w, ", reason %q", r.Reason)
				}
				fmt.Fprintln(w)
			} else {
				fmt.Fprintf(w, "rule    %d%s does not match: %s\n", s.Rule, at, s.Why)
			}
		}
		if len(steps) == 0 || steps[len(steps)-1].Why != "" {
			fmt.Fprintln(w, none)
		}
	}
	if resolved {
		fmt.Fprintln(w, "note    the rules decided on the paths as the server will open them (symbolic links followed), not as written")
	}
	fmt.Fprintf(w, "decided by %s\n", decidedBy(res, start))
	fmt.Fprintf(w, "decision %s", start.Decision)
	if msg := res.Message; msg != "" {
		fmt.Fprintf(w, ": %s", safetext.Show(msg, 600))
	}
	fmt.Fprintln(w)
	rec, err := json.Marshal(map[string]any{"decision": start.Decision, "rule": start.Rule, "class": start.Class, "reason": start.Reason})
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "record  %s\n", rec)
	if res.Status != gate.Done {
		return &exitError{code: 1, err: fmt.Errorf("explain: %s would not be forwarded (%s)", safetext.Show(target, 200), start.Decision)}
	}
	return nil
}

// decidedBy names the pipeline stage that decided res, and where it sits
// against the rules, so that the rule trace above it is not read as the
// decision: "schema, before the rules: invalid (...)".
func decidedBy(res gate.Result, start ledger.CallStart) string {
	d := res.Decision
	if res.Status == gate.Withdrawn {
		return fmt.Sprintf("exposure, before the rules: %s (%s)", start.Decision, safetext.Show(start.Reason, 600))
	}
	if d.Stage == gate.StageRules && strings.HasPrefix(d.Reason, "path not resolved") {
		return "rules, on the paths as the server will open them: " + start.Decision + " (" + safetext.Show(start.Reason, 600) + ")"
	}
	why := start.Decision
	if start.Reason != "" {
		why += " (" + safetext.Show(start.Reason, 600) + ")"
	}
	switch d.Stage {
	case gate.StageRules:
		if d.Rule == 0 {
			return "rules: " + why
		}
		return fmt.Sprintf("rules: rule %d, %s", d.Rule, why)
	case gate.StageReading, gate.StageSchema:
		return fmt.Sprintf("%s, before the rules: %s", d.Stage, why)
	case gate.StageLimits, gate.StageInterrupted, gate.StageFlows:
		return fmt.Sprintf("%s, after the rules: %s", d.Stage, why)
	}
	return fmt.Sprintf("%s: %s", d.Stage, why)
}

// takesValue reports whether flag a of explain is followed by its value.
func takesValue(a string) bool {
	switch strings.TrimLeft(a, "-") {
	case "config", "session", "labels":
		return true
	}
	return false
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

// labelSummary is a scope's labels as one line: "private since call 12:
// fs/read_file {...}; untrusted since call 14: ..." or "no labels".
func labelSummary(ls []ledger.Label) string {
	if len(ls) == 0 {
		return "no labels"
	}
	parts := make([]string, len(ls))
	for i, l := range ls {
		parts[i] = gate.Since(l)
	}
	return strings.Join(parts, "; ")
}
