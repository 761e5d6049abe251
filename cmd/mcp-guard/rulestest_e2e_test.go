package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcp-guard/mcp-guard/ledger"
)

const rulesTestTools = `{"tools":[
{"name":"read_file","inputSchema":{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}},
{"name":"write_file","inputSchema":{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}},"required":["path","content"]}},
{"name":"move_file","inputSchema":{"type":"object"}},
{"name":"fetch","inputSchema":{"type":"object","properties":{"url":{"type":"string"}}}},
{"name":"delete_all","inputSchema":{"type":"object"}}]}`

const rulesTestRules = `
[[rule]]
server = "fs"
tool = "read_file"
class = "read"
action = "allow"
labels = ["private"]

[[rule]]
server = "fs"
tool = "write_file"
class = "write"
action = "allow"
when = { "/path" = { path = "/work/scratch/**" } }

[[rule]]
server = "fs"
tool = "write_*"
class = "write"
action = "deny"
reason = "writes outside scratch"

[[rule]]
server = "fs"
tool = "move_*"
class = "write"
action = "ask"

[[rule]]
server = "fs"
tool = "fetch"
class = "network"
action = "allow"
`

// mcp-guard test decides each case as serve decides the same call: every
// case of a test file is then made through serve, in a fresh session (a
// labelled case after a read that brings its label), and the ledger row
// serve writes has the decision and rule test reported; the upstream got
// the call only when test said allow. Allow, deny by rule and by a path
// that climbs out, ask, invalid by schema and by a duplicate key, hidden
// (no rule), and a flow's ask on a session holding "private".
func TestRulesTest_AgreesWithServe(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := e.config("[limits]\napproval_wait = \"1s\"\n", e.fake("fs", rulesTestTools), rulesTestRules)
	cases := []struct{ call, args, labels, expect string }{
		{"write_file", `{"path":"/work/scratch/a.txt","content":"x"}`, "", "allow"},
		{"write_file", `{"path":"/work/scratch/../../etc/passwd","content":"x"}`, "", "deny"},
		{"write_file", `{"path":"/etc/x","content":"x"}`, "", "deny"},
		{"write_file", `{"path":"/work/scratch/a.txt"}`, "", "invalid"},
		{"read_file", `{"path":"/a","path":"/b"}`, "", "invalid"},
		{"read_file", `{"path":"/a"}`, "", "allow"},
		{"move_file", `{}`, "", "ask"},
		{"fetch", `{"url":"https://example.com"}`, "", "allow"},
		{"fetch", `{"url":"https://example.com/2"}`, "private", "ask"},
		{"delete_all", `{}`, "", "hidden"},
	}
	var file strings.Builder
	for _, c := range cases {
		file.WriteString("[[case]]\ncall = \"fs/" + c.call + "\"\nargs = '" + c.args + "'\nexpect = \"" + c.expect + "\"\n")
		if c.labels != "" {
			file.WriteString("labels = [\"" + c.labels + "\"]\n")
		}
		file.WriteString("\n")
	}
	writeFile(t, filepath.Join(e.dir, "config.test.toml"), file.String())

	// serve pins the tools; then test decides every case.
	e.rawConnect(cfg).in.Close() // its initialize waited for the listing, pinned
	out, code := e.mcpGuard("test", "--config", cfg, "--json")
	if code != 0 {
		t.Fatalf("test (exit %d):\n%s", code, out)
	}
	var got []caseJSON
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var r caseJSON
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		if r.Type == "case" {
			got = append(got, r)
		}
	}
	if len(got) != len(cases) {
		t.Fatalf("test reported %d cases, want %d:\n%s", len(got), len(cases), out)
	}

	led := e.openLedger()
	var last int64
	for i, c := range cases {
		r := e.rawConnect(cfg)
		if c.labels == "private" {
			r.send(`{"jsonrpc":"2.0","id":"pre","method":"tools/call","params":{"name":"fs__read_file","arguments":{"path":"/notes"}}}`)
			r.waitID(`"pre"`)
		}
		upstream := len(e.calls("fs"))
		r.send(`{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"fs__` + c.call + `","arguments":` + c.args + `}}`)
		r.waitID(`"c"`)
		rows, err := led.Calls(context.Background(), ledger.CallFilter{Limit: 1})
		if err != nil || len(rows) != 1 || rows[0].ID <= last {
			t.Fatalf("case %d %s %s: no new ledger row (%v, %+v)", i, c.call, c.args, err, rows)
		}
		row := rows[0]
		last = row.ID
		if row.Decision != got[i].Decision || row.Rule != got[i].Rule {
			t.Fatalf("case %d %s %s: test said %s by rule %d, serve recorded %s by rule %d (%s)", i, c.call, c.args,
				got[i].Decision, got[i].Rule, row.Decision, row.Rule, row.Reason)
		}
		if reached := len(e.calls("fs")) > upstream; reached != (got[i].Got == "allow") {
			t.Fatalf("case %d %s %s: test said %s, the upstream got it: %v", i, c.call, c.args, got[i].Got, reached)
		}
		r.in.Close()
	}
}
