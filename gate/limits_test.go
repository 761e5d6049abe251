package gate

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newLimited(t *testing.T, l Limits) (*Session, *clock) {
	t.Helper()
	c := &clock{t: time.Unix(1_800_000_000, 0)}
	return testGate(t).NewSession(l, c.now), c
}

var roomy = Limits{CallsPerSession: 1000, CallsPerToolPerMinute: 1000, IdenticalCallRepeats: 1000, ConsecutiveDenials: 1000}

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
