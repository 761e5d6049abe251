package gate

import (
	"strings"
	"time"

	"github.com/mcp-guard/mcp-guard/config"
	"github.com/mcp-guard/mcp-guard/ledger"
)

// SessionFromHistory rebuilds a host session's limit state from what the
// ledger holds for its session (ledger.SessionHistory), so that another
// process decides the session's next request as serve, which keeps the
// same state in memory, does. now may be nil (time.Now).
func (g *Gate) SessionFromHistory(l config.Limits, now func() time.Time, h []ledger.SessionEntry) *Session {
	s := g.NewSession(l, now)
	for _, e := range h {
		s.replay(e)
	}
	return s
}

// replay applies one recorded step to the session's state as the session
// did when it decided it: a counted request (allowed, or held for the
// operator) is a call, a repeat or not, and ends a run of refusals; a
// refusal adds to the run and may stop the session; a reset lifts it.
func (s *Session) replay(e ledger.SessionEntry) {
	if e.Reset {
		s.locked, s.denials, s.repeats, s.lastCall = false, 0, 0, ""
		return
	}
	var name string
	switch e.Kind {
	case ledger.KindTool:
		name = e.Server + "/" + e.Tool
	case ledger.KindPrompt:
		name = PromptName(e.Server, e.Tool)
	case ledger.KindResource:
		name = ResourceName(e.Server, e.Tool)
	default: // an upstream's request of the host: not the host session's
		return
	}
	switch {
	case strings.HasPrefix(e.Decision, "unknown_"):
		// Refused before the session decided it: not exposed, or withdrawn.
	case e.Reason == "limit: "+LimitConsecutiveDenials:
		s.locked = true
	case counted(e):
		key := name + "\x00"
		if e.Kind != ledger.KindResource { // a read's URI is its name
			key += e.ArgsDigest
		}
		repeats := int64(1)
		if key == s.lastCall {
			repeats = s.repeats + 1
		}
		s.lastCall, s.repeats = key, repeats
		s.calls++
		window := s.perTool[name]
		for len(window) > 0 && e.At.Sub(window[0]) >= time.Minute {
			window = window[1:]
		}
		s.perTool[name] = append(window, e.At)
		s.denials = 0
	default:
		s.denials++
		if s.denials >= s.limits.ConsecutiveDenials {
			s.locked = true
		}
	}
}

// counted reports whether the session counted a recorded request as a
// call: allowed, asked (an interrupted call's ask too), run on a grant, or
// asked and refused only because too many asks already waited.
func counted(e ledger.SessionEntry) bool {
	switch e.Decision {
	case Allow.String(), Ask.String(), "grant":
		return true
	}
	return e.Decision == Deny.String() && e.Reason == "limit: pending_approvals"
}
