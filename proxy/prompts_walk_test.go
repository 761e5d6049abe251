package proxy

import (
	"strings"
	"testing"

	"github.com/mcp-guard/mcp-guard/classify"
	"github.com/mcp-guard/mcp-guard/ledger"
)

// A prompts/get's arguments are read strictly by gate (J1), not decoded
// into a string map that would hide a duplicate name or a
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

// mcp-guard answers prompts/get itself, reading the request once: the
// prompt the ledger records is the one forwarded, however the request
// spells its name; a 2026-07-28 host gets the server's own bytes (not
// re-encoded) in that revision's envelope; a get of a name the host was
// not shown, or with params that are no object, is refused in words, the
// first recorded, neither forwarded.
func TestWalk_PromptGetIsMcpGuards(t *testing.T) {
	walk(t, func(t *testing.T) {
		p := newMemProxy(t, []classify.Rule{{Server: "notes", Prompt: "*", Action: classify.Allow}},
			[2]string{"notes", `{"tools":[],"prompts":[{"name":"greet"},{"name":"other"}]}`})
		h := startMemHost(t, p.Proxy)
		r := h.request("1", "prompts/get", `{"name":"notes__other","Name":"notes__greet","arguments":{"who":"<Ada & co>"},`+modernMeta+`}`)
		const want = `{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"mcp-guard","version":"test"}},"resultType":"complete","description":"fake prompt greet","messages":[{"role":"user","content":{"type":"text","text":"prompt greet arguments {\"who\":\"<Ada & co>\"}"}}]}`
		if string(r.Result) != want {
			t.Fatalf("a 2026-07-28 host's get:\n got  %s\n want %s", r.Result, want)
		}
		if r := h.request("2", "prompts/get", `{"name":"notes__nope","arguments":{"who":"x"}}`); r.Error == nil || r.Error.Code != -32602 || !strings.Contains(r.Error.Message, `"notes__nope" not found`) {
			t.Fatalf("a get of a name not shown: %+v", r.Error)
		}
		if r := h.request("3", "prompts/get", `[]`); r.Error == nil || r.Error.Code != -32602 || r.Error.Message != "invalid prompts/get params: params must be a JSON object" {
			t.Fatalf("a get whose params are no object: %+v", r.Error)
		}
		if r := h.request("4", "prompts/get", `{"name":7}`); r.Error == nil || r.Error.Code != -32602 || r.Error.Message != `invalid prompts/get params: "name" is a JSON number, not a string` {
			t.Fatalf("a get whose name is a number: %+v", r.Error)
		}
		if gets := p.received(t, "notes", "prompts/get"); len(gets) != 1 || !strings.Contains(gets[0], `{"name":"greet","arguments":{"who":"<Ada & co>"}}`) {
			t.Fatalf("upstream received %v", gets)
		}
		var rows []ledger.CallRow
		for _, r := range p.calls(t) {
			if r.Kind == ledger.KindPrompt {
				rows = append([]ledger.CallRow{r}, rows...) // oldest first
			}
		}
		if len(rows) != 2 || rows[0].Tool != "greet" || rows[0].Decision != "allow" || rows[1].Decision != "unknown_prompt" || rows[1].Exposed != "notes__nope" {
			t.Fatalf("ledger: %+v", rows)
		}
	})
}
