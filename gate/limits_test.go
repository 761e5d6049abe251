package gate

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mcp-guard/mcp-guard/config"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newLimited(t *testing.T, l config.Limits) (*Session, *clock) {
	t.Helper()
	c := &clock{t: time.Unix(1_800_000_000, 0)}
	return testGate(t).NewSession(l, c.now), c
}

var roomy = config.Limits{CallsPerSession: 1000, CallsPerToolPerMinute: 1000, IdenticalCallRepeats: 1000, ConsecutiveDenials: 1000}

func TestLimits_CallsPerSession(t *testing.T) {
	l := roomy
	l.CallsPerSession = 3
	s, _ := newLimited(t, l)
	for i := range 3 {
		if d := s.Decide("fs", "read_file", anyObject(t), []byte(fmt.Sprintf(`{"n":%d}`, i))); d.Outcome != Allow {
			t.Fatalf("call %d: %+v", i, d)
		}
	}
	d := s.Decide("fs", "read_file", anyObject(t), []byte(`{"n":9}`))
	if d.Outcome != Deny || d.Limit != LimitCallsPerSession || !strings.Contains(d.Message, "limits.calls_per_session (3 calls)") {
		t.Fatalf("4th call: %+v", d)
	}
}

func TestLimits_CallsPerToolPerMinute(t *testing.T) {
	l := roomy
	l.CallsPerToolPerMinute = 2
	s, c := newLimited(t, l)
	s.Decide("fs", "read_file", anyObject(t), []byte(`{"n":1}`))
	c.t = c.t.Add(30 * time.Second)
	s.Decide("fs", "read_file", anyObject(t), []byte(`{"n":2}`))
	if d := s.Decide("fs", "read_file", anyObject(t), []byte(`{"n":3}`)); d.Outcome != Deny || d.Limit != LimitCallsPerToolMinute || !strings.Contains(d.Message, "try again in 30s") {
		t.Fatalf("3rd call in a minute: %+v", d)
	}
	if d := s.Decide("fs", "read_other", anyObject(t), []byte(`{}`)); d.Outcome != Allow {
		t.Fatalf("another tool is not limited by this one: %+v", d)
	}
	c.t = c.t.Add(31 * time.Second)
	if d := s.Decide("fs", "read_file", anyObject(t), []byte(`{"n":4}`)); d.Outcome != Allow {
		t.Fatalf("after the window moved: %+v", d)
	}
}

func TestLimits_IdenticalCallRepeats(t *testing.T) {
	l := roomy
	l.IdenticalCallRepeats = 2
	s, _ := newLimited(t, l)
	same := []byte(`{"path":"/a","n":1}`)
	spelledOtherwise := []byte(`{ "n":1.0, "path":"\/a" }`) // the same canonical arguments
	s.Decide("fs", "read_file", anyObject(t), same)
	s.Decide("fs", "read_file", anyObject(t), spelledOtherwise)
	if d := s.Decide("fs", "read_file", anyObject(t), same); d.Outcome != Deny || d.Limit != LimitIdenticalRepeats {
		t.Fatalf("3rd identical call: %+v", d)
	}
	if d := s.Decide("fs", "read_file", anyObject(t), []byte(`{"path":"/b"}`)); d.Outcome != Allow {
		t.Fatalf("different arguments: %+v", d)
	}
	if d := s.Decide("fs", "read_file", anyObject(t), same); d.Outcome != Allow {
		t.Fatalf("the same call again after a different one: %+v", d)
	}
}

func TestLimits_ConsecutiveDenialsStopTheSession(t *testing.T) {
	l := roomy
	l.ConsecutiveDenials = 3
	s, _ := newLimited(t, l)
	s.Decide("fs", "delete_x", anyObject(t), []byte(`{}`))
	s.Decide("fs", "read_file", anyObject(t), []byte(`{}`)) // an allowed call resets the count
	s.Decide("fs", "delete_x", anyObject(t), []byte(`{}`))
	s.Decide("fs", "delete_x", anyObject(t), []byte(`{}`))
	d := s.Decide("fs", "read_file", anyObject(t), []byte(`{"path":`)) // invalid counts too
	if d.Outcome != Invalid || !strings.Contains(d.Message, "3rd refusal in a row") {
		t.Fatalf("3rd refusal: %+v", d)
	}
	if d := s.Decide("fs", "read_file", anyObject(t), []byte(`{}`)); d.Outcome != Refuse || d.Limit != LimitConsecutiveDenials {
		t.Fatalf("after the session stopped, an allowed call: %+v", d)
	}
	s.Reset()
	if d := s.Decide("fs", "read_file", anyObject(t), []byte(`{}`)); d.Outcome != Allow {
		t.Fatalf("after Reset: %+v", d)
	}
}

// uncount (a call the commit found a flow denies) leaves the session as if
// the refusal had been decided at once: not a call, one more in the run of
// refusals, the repeats as before it. When another call was counted since,
// that call ended the run and set the repeats: only the call is taken back.
func TestLimits_UncountIsTheRefusalInItsPlace(t *testing.T) {
	l := roomy
	l.ConsecutiveDenials, l.CallsPerToolPerMinute = 2, 2
	s, _ := newLimited(t, l)
	allow := func(args string) Decision {
		t.Helper()
		d := s.decide("fs/x", []byte(args), func() Decision { return Decision{Outcome: Allow} })
		if d.Outcome != Allow || d.counted == nil {
			t.Fatalf("%s: %+v", args, d)
		}
		return d
	}
	deny := func(d Decision) Decision {
		d.Outcome, d.Message = Deny, "denied"
		return s.uncount(d)
	}
	a := allow(`{"a":1}`)
	refused := s.decide("fs/y", nil, func() Decision { return Decision{Outcome: Deny, Message: "no"} })
	if s.denials != 1 || refused.Outcome != Deny {
		t.Fatalf("a refusal: %d in a row", s.denials)
	}
	d := deny(a)
	if s.calls != 0 || len(s.perTool["fs/x"]) != 0 || s.lastCall != "" || s.repeats != 0 || s.denials != 2 || !s.locked ||
		!strings.Contains(d.Message, "refuses every further call in this session") {
		t.Fatalf("after uncount: %d calls, %d in the minute, last %q ×%d, %d refusals in a row, locked %v: %q",
			s.calls, len(s.perTool["fs/x"]), s.lastCall, s.repeats, s.denials, s.locked, d.Message)
	}
	if again := s.uncount(d); again.Message != d.Message || s.calls != 0 {
		t.Fatalf("an uncounted decision was taken back twice: %d calls", s.calls)
	}

	s.Reset()
	first := allow(`{"a":1}`)
	second := allow(`{"a":1}`) // a repeat of the first, counted after it
	deny(first)
	if s.calls != 1 || len(s.perTool["fs/x"]) != 1 || s.repeats != 2 || s.denials != 0 || s.locked {
		t.Fatalf("after uncounting a call followed by another: %d calls, %d in the minute, ×%d, %d refusals in a row, locked %v",
			s.calls, len(s.perTool["fs/x"]), s.repeats, s.denials, s.locked)
	}
	_ = second
	allow(`{"a":2}`) // the minute's room came back with the call taken back
}
