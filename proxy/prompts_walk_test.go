package proxy

import (
	"strings"
	"testing"

	"github.com/mcp-guard/mcp-guard/classify"
	"github.com/mcp-guard/mcp-guard/ledger"
)

// A prompts/get's arguments are read strictly by gate (J1) before mcp-go
// decodes them into a string map that would hide a duplicate name or a
// number: a get of an exposed prompt with such arguments goes through the
// pipeline, is refused and recorded with the host's bytes out of band; one
// of a prompt the host is not shown is refused and recorded as such; a
// strict get is forwarded with its arguments. Nothing refused reaches the
// server.
func TestWalk_PromptArgumentsReadStrictly(t *testing.T) {
	walk(t, func(t *testing.T) {
		p := newMemProxy(t, []classify.Rule{{Server: "notes", Prompt: "simple-args", Action: classify.Allow}},
			[2]string{"notes", `{"tools":[],"prompts":[
 {"name":"simple-args","description":"Greets someone.","arguments":[{"name":"who","required":true}]},
 {"name":"hidden","description":"No rule covers it."}]}`})
		h := startMemHost(t, p.Proxy)
		if r := h.request("1", "prompts/get", `{"name":"notes__simple-args","arguments":{"who":"Eve","who":"Ada"}}`); r.Error == nil || !strings.Contains(r.Error.Message, "duplicate") {
			t.Fatalf("duplicate argument: %+v %s", r.Error, r.Result)
		}
		if r := h.request("2", "prompts/get", `{"name":"notes__simple-args","arguments":{"who":1}}`); r.Error == nil || !strings.Contains(r.Error.Message, "not all strings") {
			t.Fatalf("number argument: %+v %s", r.Error, r.Result)
		}
		if r := h.request("3", "prompts/get", `{"name":"notes__hidden","arguments":{"who":1}}`); r.Error == nil || !strings.Contains(r.Error.Message, "not all strings") {
			t.Fatalf("number argument to a prompt not shown: %+v %s", r.Error, r.Result)
		}
		if r := h.request("4", "prompts/get", `{"name":"notes__simple-args","arguments":{"who":"Ada"}}`); r.Error != nil {
			t.Fatalf("valid get: %+v", r.Error)
		}
		if gets := p.received(t, "notes", "prompts/get"); len(gets) != 1 || !strings.Contains(gets[0], `"arguments":{"who":"Ada"}`) {
			t.Fatalf("upstream received %v", gets)
		}
		var rows []ledger.CallRow
		for _, r := range p.calls(t) {
			if r.Kind == ledger.KindPrompt {
				rows = append([]ledger.CallRow{r}, rows...) // oldest first
			}
		}
		if len(rows) != 4 {
			t.Fatalf("ledger: %d prompt rows, want 4: %+v", len(rows), rows)
		}
		if r := rows[0]; r.Decision != "invalid" || string(r.ArgsInvalid) != `{"who":"Eve","who":"Ada"}` || r.Args != nil || r.Tool != "simple-args" {
			t.Errorf("the duplicate's row: %+v", r)
		}
		if r := rows[1]; r.Decision != "invalid" || string(r.ArgsInvalid) != `{"who":1}` || r.Args != nil {
			t.Errorf("the number's row: %+v", r)
		}
		if r := rows[2]; r.Decision != "unknown_prompt" || r.Server != "notes" || r.Tool != "hidden" || string(r.ArgsInvalid) != `{"who":1}` || r.Args != nil ||
			!strings.Contains(r.Reason, "not exposed") || !strings.Contains(r.Reason, "not all strings") {
			t.Errorf("the hidden prompt's row: %+v", r)
		}
		if r := rows[3]; r.Decision != "allow" || string(r.Args) != `{"who":"Ada"}` {
			t.Errorf("the valid get's row: %+v", r)
		}
	})
}
