package config

import (
	"fmt"
	"slices"
	"strings"
)

// ApprovalsConfig is the [approvals] table: where a call held for the
// operator is also asked about.
type ApprovalsConfig struct {
	// InHost also asks the host, in its own UI (an elicitation form), about
	// every held tool call whose rule does not say otherwise (ask_in), when
	// the host can show one. The terminal keeps working; the first decision
	// wins.
	InHost bool `toml:"in_host"`
	// HostMayApprove names the classes of exec and destructive calls the
	// host may also be asked about; without it, those are the terminal's
	// alone, whatever in_host or ask_in say.
	HostMayApprove []string `toml:"host_may_approve"`
}

// Where a held call is asked about (a rule's ask_in).
const (
	AskInTerminal = "terminal" // the operator's terminal only (watch, approve)
	AskInHost     = "host"     // the host's form too, and no desktop notification
	AskInBoth     = "both"     // the host's form and the desktop notification too
)

// hostOnlyClasses are the classes the host is never asked about unless
// [approvals] host_may_approve names them.
var hostOnlyClasses = []string{"exec", "destructive"}

// checkAskIn checks each rule's ask_in and [approvals], and returns where
// each rule's held calls are asked about (index: rule-1).
func checkAskIn(a ApprovalsConfig, rules []RuleConfig, add func(string, ...any)) []string {
	for i, cl := range a.HostMayApprove {
		if !slices.Contains(hostOnlyClasses, cl) {
			add("approvals.host_may_approve[%d]: %q: name exec or destructive (the host may always be asked about read, write and network calls)", i+1, cl)
		}
	}
	out := make([]string, len(rules))
	for i, r := range rules {
		at := fmt.Sprintf("rule[%d]", i+1)
		askIn := r.AskIn
		switch askIn {
		case "":
			askIn = AskInTerminal
			if a.InHost {
				askIn = AskInBoth
			}
			if slices.Contains(hostOnlyClasses, r.Class) && !slices.Contains(a.HostMayApprove, r.Class) {
				askIn = AskInTerminal
			}
		case AskInTerminal, AskInHost, AskInBoth:
			if r.Tool == "" {
				add("%s.ask_in: only a tool rule holds calls for approval", at)
			}
			if askIn != AskInTerminal && slices.Contains(hostOnlyClasses, r.Class) && !slices.Contains(a.HostMayApprove, r.Class) {
				add("%s.ask_in: %q: a host is not the operator's terminal, so it is not asked about %s calls unless [approvals] host_may_approve names %q", at, askIn, r.Class, r.Class)
			}
		default:
			add("%s.ask_in: %q: want %s", at, r.AskIn, strings.Join([]string{AskInTerminal, AskInHost, AskInBoth}, ", "))
		}
		out[i] = askIn
	}
	return out
}

// AskIn is where the calls rule (1-based) holds are asked about:
// AskInTerminal, AskInHost or AskInBoth.
func (c *Config) AskIn(rule int) string {
	if rule < 1 || rule > len(c.askIn) {
		return AskInTerminal
	}
	return c.askIn[rule-1]
}
