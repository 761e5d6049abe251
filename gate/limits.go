package gate

import (
	"fmt"
	"sync"
	"time"

	"github.com/mcp-guard/mcp-guard/config"
	"github.com/mcp-guard/mcp-guard/internal/canon"
	"github.com/mcp-guard/mcp-guard/pin"
)

// Limit names, as they appear in results and the ledger.
const (
	LimitCallsPerSession    = "calls_per_session"
	LimitCallsPerToolMinute = "calls_per_tool_per_minute"
	LimitIdenticalRepeats   = "identical_call_repeats"
	LimitConsecutiveDenials = "consecutive_denials"
)

// Session is one host session's limit state. It is safe for concurrent use.
type Session struct {
	g      *Gate
	limits config.Limits // calls_per_session, calls_per_tool_per_minute, identical_call_repeats, consecutive_denials
	now    func() time.Time

	mu       sync.Mutex
	calls    int64
	perTool  map[string][]time.Time // forwarded calls in the last minute
	lastCall string                 // server/tool/args-digest of the last call decided
	repeats  int64
	denials  int64
	locked   bool
	// seq numbers the requests decided; counted is the last one counted
	// (Session.uncount).
	seq, counted uint64
}

// countTicket is how the session counted one request, for uncount.
type countTicket struct {
	name                     string
	at                       time.Time
	seq, prevCounted         uint64
	prevLast                 string
	prevRepeats, prevDenials int64
}

// NewSession starts a host session's limit state. now may be nil (time.Now).
func (g *Gate) NewSession(l config.Limits, now func() time.Time) *Session {
	if now == nil {
		now = time.Now
	}
	return &Session{g: g, limits: l, now: now, perTool: map[string][]time.Time{}}
}

// Reset lifts a refusal after consecutive denials and clears the counters of
// repeats and denials (an operator's decision).
func (s *Session) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.locked, s.denials, s.repeats, s.lastCall = false, 0, 0, ""
	s.counted = 0 // uncount takes back only the calls of what came before
}

// Decide decides one call in this session: the rules (Gate.Decide), then the
// limits. A call over a limit is denied with the limit's name; after
// ConsecutiveDenials refusals in a row every call is refused until Reset.
func (s *Session) Decide(server, tool string, schema *pin.Schema, args []byte) Decision {
	return s.decide(server+"/"+tool, args, func() Decision { return s.g.Decide(server, tool, schema, args) })
}

// decide applies the session's limits around one decision: name is what the
// limits count and the messages show, args the bytes identical repeats
// compare.
func (s *Session) decide(name string, args []byte, decide func() Decision) Decision {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.locked {
		return limitDecision(Refuse, LimitConsecutiveDenials,
			fmt.Sprintf("mcp-guard: call to %s refused: this session was stopped after %d refused calls in a row; the operator must run `mcp-guard reset` or restart mcp-guard to continue", name, s.limits.ConsecutiveDenials))
	}
	s.seq++
	d := decide()
	if d.Outcome == Allow || d.Outcome == Ask {
		d = s.applyLimits(name, args, d)
	}
	if d.Outcome == Allow || d.Outcome == Ask { // asking the operator is not a refusal
		if d.counted != nil {
			d.counted.prevDenials = s.denials
		}
		s.denials = 0
		return d
	}
	return s.refused(d)
}

// refused adds d to the session's run of refusals.
func (s *Session) refused(d Decision) Decision {
	s.denials++
	if s.denials >= s.limits.ConsecutiveDenials {
		s.locked = true
		d.Message += fmt.Sprintf(" — this was the %d%s refusal in a row: mcp-guard refuses every further call in this session", s.denials, ordinal(s.denials))
	}
	return d
}

// uncount turns a request the session counted into the refusal d, as if
// it had been refused when it was decided: it is not a call, and it adds
// to the run of refusals. When the session has counted another request
// since, that one ended the run and set the repeats: only the calls are
// taken back. explain's replay of the ledger counts d as this refusal.
func (s *Session) uncount(d Decision) Decision {
	t := d.counted
	if t == nil {
		return d
	}
	d.counted = nil
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls--
	w := s.perTool[t.name]
	for i := len(w) - 1; i >= 0; i-- {
		if w[i].Equal(t.at) {
			s.perTool[t.name] = append(w[:i:i], w[i+1:]...)
			break
		}
	}
	if s.counted != t.seq {
		return d
	}
	s.counted, s.lastCall, s.repeats = t.prevCounted, t.prevLast, t.prevRepeats
	s.denials += t.prevDenials
	return s.refused(d)
}

// applyLimits checks an allowed call against the session's limits and, when
// it passes, counts it.
func (s *Session) applyLimits(name string, args []byte, d Decision) Decision {
	if s.calls >= s.limits.CallsPerSession {
		return limitDecision(Deny, LimitCallsPerSession,
			fmt.Sprintf("mcp-guard: call to %s denied: this session reached limits.%s (%d calls)", name, LimitCallsPerSession, s.limits.CallsPerSession))
	}
	now := s.now()
	window := s.perTool[name]
	for len(window) > 0 && now.Sub(window[0]) >= time.Minute {
		window = window[1:]
	}
	s.perTool[name] = window
	if int64(len(window)) >= s.limits.CallsPerToolPerMinute {
		wait := time.Minute - now.Sub(window[0])
		return limitDecision(Deny, LimitCallsPerToolMinute,
			fmt.Sprintf("mcp-guard: call to %s denied: limits.%s (%d) reached; try again in %s", name, LimitCallsPerToolMinute, s.limits.CallsPerToolPerMinute, wait.Round(time.Second)))
	}
	key := name + "\x00"
	if len(args) > 0 {
		digested, err := canon.DigestOf(args)
		if err != nil { // the gate read them strictly already: fail closed
			return limitDecision(Refuse, "arguments", fmt.Sprintf("mcp-guard: call to %s refused: arguments cannot be hashed: %v", name, err))
		}
		key += digested.Digest()
		d.Args = digested
	}
	repeats := int64(1)
	if key == s.lastCall {
		repeats = s.repeats + 1
	}
	if repeats > s.limits.IdenticalCallRepeats {
		return limitDecision(Deny, LimitIdenticalRepeats,
			fmt.Sprintf("mcp-guard: call to %s denied: the same call with the same arguments was made %d times in a row (limits.%s); change the arguments or do something else", name, s.limits.IdenticalCallRepeats, LimitIdenticalRepeats))
	}
	d.counted = &countTicket{name: name, at: now, seq: s.seq, prevCounted: s.counted, prevLast: s.lastCall, prevRepeats: s.repeats}
	s.counted = s.seq
	s.lastCall, s.repeats = key, repeats
	s.calls++
	s.perTool[name] = append(window, now)
	return d
}

func limitDecision(o Outcome, limit, msg string) Decision {
	return Decision{Outcome: o, Stage: StageLimits, Reason: "limit: " + limit, Limit: limit, Message: msg}
}

func ordinal(n int64) string {
	switch {
	case n%100 >= 11 && n%100 <= 13:
		return "th"
	case n%10 == 1:
		return "st"
	case n%10 == 2:
		return "nd"
	case n%10 == 3:
		return "rd"
	}
	return "th"
}
