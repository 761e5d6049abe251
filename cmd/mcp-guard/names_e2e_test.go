package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-guard/mcp-guard/ledger"
)

// J3 through the real binary: a rule allows read_file only under /srv/ok;
// a host that adds a member differing only in case ("PATH", "pAtH", a
// U+017F or U+212A spelling), or sends the folded name alone, is refused
// before any rule runs, its bytes recorded out of band and never
// forwarded; the exact name under the allowed tree is forwarded. The
// forwarded bytes are read back as a Go server would (encoding/json into a
// struct), to show what the upstream reads is what the rule checked.
func TestServe_CaseFoldedArgumentNamesRefused(t *testing.T) {
	e := newEnv(t)
	cfg := e.config(e.fake("fs", `{"tools":[{"name":"read_file","inputSchema":{"type":"object","properties":{"path":{"type":"string"}}}},
{"name":"stat","inputSchema":{"type":"object"}}]}`), `
[[rule]]
server = "fs"
tool = "read_file"
class = "read"
action = "allow"
when = { "/path" = { path = "/srv/ok/**" } }

[[rule]]
server = "fs"
tool = "stat"
class = "read"
action = "allow"
when = { "/opts/kind" = { one_of = ["file", "dir"] } }
`)
	r := e.rawConnect(cfg)
	refused := []struct{ tool, args string }{
		{"read_file", `{"path":"/srv/ok/a","PATH":"/etc/shadow"}`},
		{"read_file", `{"path":"/srv/ok/a","pAtH":"/etc/shadow"}`},
		{"read_file", `{"PATH":"/etc/shadow"}`},
		{"stat", `{"opts":{"kind":"file","` + "\u212a" + `ind":"socket"}}`},
		{"stat", `{"opts":{"Kind":"socket"}}`},
		{"stat", `{"opts":{"kind":"file"},"OPTS":{"kind":"socket"}}`},
	}
	for i, c := range refused {
		r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"fs__%s","arguments":%s}}`, i+1, c.tool, c.args))
		m := r.waitID(fmt.Sprint(i + 1))
		if !strings.Contains(string(m.Result), `"isError":true`) || !strings.Contains(string(m.Result), "differ") {
			t.Errorf("%s %s: not refused for its case-folded names: %s", c.tool, c.args, m.line)
		}
	}
	if n := len(e.calls("fs")); n != 0 {
		t.Fatalf("%d calls with case-folded names reached the upstream", n)
	}
	rows := e.openLedger()
	all, err := rows.Calls(t.Context(), ledger.CallFilter{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	invalid := map[string]bool{}
	for _, row := range all {
		if row.Decision == "invalid" && row.Args == nil {
			invalid[string(row.ArgsInvalid)] = true
		}
	}
	for _, c := range refused {
		if !invalid[c.args] {
			t.Errorf("no invalid row holds %s verbatim out of band", c.args)
		}
	}

	// The allow path: exact names reach the upstream, and a Go server reads
	// the very path the rule checked.
	r.send(`{"jsonrpc":"2.0","id":100,"method":"tools/call","params":{"name":"fs__read_file","arguments":{"path":"/srv/ok/a","paths":"x"}}}`)
	if m := r.waitID(`100`); strings.Contains(string(m.Result), `"isError":true`) {
		t.Fatalf("exact names refused: %s", m.line)
	}
	r.send(`{"jsonrpc":"2.0","id":101,"method":"tools/call","params":{"name":"fs__stat","arguments":{"opts":{"kind":"dir"}}}}`)
	if m := r.waitID(`101`); strings.Contains(string(m.Result), `"isError":true`) {
		t.Fatalf("exact names refused: %s", m.line)
	}
	got := e.calls("fs")
	if len(got) != 2 {
		t.Fatalf("%d calls reached the upstream, want 2", len(got))
	}
	var call struct {
		Params struct {
			Arguments struct{ Path string } `json:"arguments"`
		} `json:"params"`
	}
	if err := json.Unmarshal([]byte(got[0].line), &call); err != nil || call.Params.Arguments.Path != "/srv/ok/a" {
		t.Fatalf("a Go server reads path %q (%v) from %s", call.Params.Arguments.Path, err, got[0].line)
	}
}

// J3 for what a server asks of the host: a sampling request whose params
// hold member names equal under case folding ("maxTokens" and
// "MaxTokens": the operator's display and the host's Go decoder would read
// different limits) is refused and recorded, and the host is never asked;
// the same request spelled once is relayed.
func TestClientRequests_CaseFoldedParamsRefused(t *testing.T) {
	var sampled, elicited atomic.Int32
	e := newEnv(t)
	script := `{"tools":[{"name":"folded","inputSchema":{"type":"object"}},{"name":"plain","inputSchema":{"type":"object"}}],
"calls":{"folded":{"do":"serverRequest","method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"maxTokens":5,"MaxTokens":100000}},
"plain":{"do":"serverRequest","method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"maxTokens":5}}}}`
	h := e.connectWithHandlers(e.config(e.fake("notes", script, `allow_sampling = "allow"`), allowAll), &sampled, &elicited)
	res, err := h.call(t, "notes__folded", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(resultText(res), "differ only in case") || sampled.Load() != 0 {
		t.Fatalf("the upstream got %q and the host sampled %d times; want a refusal naming the names, and none", resultText(res), sampled.Load())
	}
	rows, _ := e.openLedger().Calls(context.Background(), ledger.CallFilter{Limit: 100})
	found := false
	for _, r := range rows {
		if r.Tool == "sampling/createMessage" && r.Decision == "invalid" && r.Server == "notes" {
			found = true
		}
	}
	if !found {
		t.Fatalf("the refused sampling request is not in the ledger as invalid: %+v", rows)
	}
	res, err = h.call(t, "notes__plain", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(resultText(res), "sampled by the host") || sampled.Load() != 1 {
		t.Fatalf("the plain request: upstream got %q, host sampled %d times; want the host's answer, once", resultText(res), sampled.Load())
	}
}

// J3 for the host's answers: an elicitation answer whose content holds
// "name" and "NAME" is not relayed to the server (a Go server would read
// one of them, the ledger and the operator both); the server gets an error
// and the refusal is recorded. An answer spelled once is relayed.
func TestClientRequests_CaseFoldedAnswerRefused(t *testing.T) {
	e := newEnv(t)
	script := `{"tools":[{"name":"ask","inputSchema":{"type":"object"}}],
"calls":{"ask":{"do":"serverRequest","method":"elicitation/create","params":{"message":"Your name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}}}}}}}`
	var folded atomic.Bool
	folded.Store(true)
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-host", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			if folded.Load() {
				return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "ann", "NAME": "root"}}, nil
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "ann"}}, nil
		},
	})
	h := e.connectClient(e.config(e.fake("notes", script, `allow_elicitation = "allow"`), allowAll), client)
	res, err := h.call(t, "notes__ask", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	if txt := resultText(res); !strings.Contains(txt, "differ only in case") || strings.Contains(txt, "root") {
		t.Fatalf("the upstream got %q; want a refusal, never the answer", txt)
	}
	rows, _ := e.openLedger().Calls(context.Background(), ledger.CallFilter{Limit: 100})
	found := false
	for _, r := range rows {
		found = found || r.Tool == "elicitation/create" && r.Server == "notes"
	}
	if !found {
		t.Fatalf("no elicitation row: %+v", rows)
	}
	folded.Store(false)
	res, err = h.call(t, "notes__ask", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	if txt := resultText(res); !strings.Contains(txt, "ann") || strings.Contains(txt, "differ") {
		t.Fatalf("the answer spelled once: upstream got %q", txt)
	}
}
