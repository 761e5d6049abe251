package proxy

import (
	"encoding/json"
	"strings"
	"testing"
)

// A requestState is good once, for the host session it was issued to,
// the tool and the arguments of the call it continues. Another session's
// retry is refused and leaves it to its own host.
func TestInputStates_BoundToHostToolArgs(t *testing.T) {
	var s inputStates
	owner, other := &hostSession{}, &hostSession{}
	cancelled := false
	rc := &rounds{host: owner, tool: "db__confirm", args: json.RawMessage(`{"x":1,"y":[2]}`), cancel: func(error) { cancelled = true }}
	state, err := s.issue(rc, &inputAsk{method: "elicitation/create", answer: make(chan inputAnswer, 1)})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		state string
		host  *hostSession
		tool  string
		args  string
		want  string
	}{
		{state + "x", owner, "db__confirm", `{"x":1,"y":[2]}`, "not one mcp-guard issued"},
		{state, other, "db__confirm", `{"x":1,"y":[2]}`, "another host session"},
		{state, owner, "db__echo", `{"x":1,"y":[2]}`, "issued for a call of db__confirm"},
		{state, owner, "db__confirm", `{"x":1}`, "arguments differ"},
	} {
		if _, err := s.claim(c.state, c.host, c.tool, json.RawMessage(c.args)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Fatalf("claim %+v: %v, want %q", c, err, c.want)
		}
	}
	pi, err := s.claim(state, owner, "db__confirm", json.RawMessage(` { "y" : [2], "x" : 1 } `))
	if err != nil || pi.rc != rc {
		t.Fatalf("the owner's retry: %v", err)
	}
	if _, err := s.claim(state, owner, "db__confirm", json.RawMessage(`{"x":1,"y":[2]}`)); err == nil || !strings.Contains(err.Error(), "already used") {
		t.Fatalf("replay: %v", err)
	}
	if cancelled {
		t.Fatal("a claimed call was cancelled")
	}
}

// An elicitation form reaches a stateless host as the server wrote it:
// its fields in the server's order.
func TestInputRequest_KeepsTheServersForm(t *testing.T) {
	params := json.RawMessage(`{"message":"m","requestedSchema":{"type":"object","properties":{"zeta":{"type":"string"},"alpha":{"type":"boolean"}},"required":["zeta"]}}`)
	r, err := inputRequest("elicitation/create", params)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"requestedSchema":{"type":"object","properties":{"zeta":{"type":"string"},"alpha":{"type":"boolean"}},"required":["zeta"]}`) {
		t.Fatalf("form re-encoded: %s", b)
	}
}
