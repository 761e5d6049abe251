package config

import (
	"errors"
	"fmt"
	"slices"

	"github.com/mcp-guard/mcp-guard/classify"
)

// compileFlows checks flows = [] and every [[flow]], and returns the flows
// in force.
func (c *Config) compileFlows() (*classify.Flows, []error) {
	var errs []error
	off := c.FlowsOff != nil
	if off && len(*c.FlowsOff) > 0 {
		errs = append(errs, errors.New("flows: only flows = [] is accepted here (it turns the default flows off); write each flow as a [[flow]] table"))
	}
	written := make([]classify.Flow, 0, len(c.Flow))
	for _, f := range c.Flow {
		to := make([]classify.Class, len(f.To))
		for i, t := range f.To {
			to[i] = classify.Class(t)
		}
		written = append(written, classify.Flow{From: f.From, To: to, Action: classify.Action(f.Action), Reason: f.Reason})
	}
	flows, err := classify.CompileFlows(written, off)
	if err != nil {
		errs = append(errs, splitJoined(err)...)
	}
	return flows, errs
}

// flowWarnings names a flow whose label no rule gives (it never applies,
// except secret, which the secrets support gives) and a rule label no flow
// reads (it is recorded, and changes no decision).
func flowWarnings(rules []RuleConfig, flows *classify.Flows) []string {
	given := map[string]bool{}
	for _, r := range rules {
		for _, l := range r.Labels {
			given[l] = true
		}
	}
	read := map[string]bool{}
	var out []string
	for _, f := range flows.InForce() {
		read[f.From] = true
		if f.Source == classify.FlowWritten && !given[f.From] && f.From != classify.Secret {
			out = append(out, fmt.Sprintf("flow[%d]: no rule gives the label %q, so this flow never applies", f.Index, f.From))
		}
	}
	var unread []string
	for l := range given {
		if !read[l] {
			unread = append(unread, l)
		}
	}
	slices.Sort(unread)
	for _, l := range unread {
		out = append(out, fmt.Sprintf("label %q: no flow starts from it; it is recorded and changes no decision", l))
	}
	return out
}
