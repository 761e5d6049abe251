package proxy

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcp-guard/mcp-guard/classify"
)

const threeTools = `{"tools":[
{"name":"read_note","description":"Reads a note.","inputSchema":{"type":"object","properties":{"id":{"type":"string"}}}},
{"name":"drop_table","description":"Drops a table.","inputSchema":{"type":"object"}},
{"name":"unclassified","description":"No rule names me.","inputSchema":{"type":"object"}}],
"calls":{"drop_table":{"do":"echo"}}}`

var threeRules = []classify.Rule{
	{Server: "notes", Tool: "read_note", Class: classify.Read, Action: classify.Allow},
	{Server: "notes", Tool: "drop_table", Class: classify.Destructive, Action: classify.Deny, Reason: "tables are never dropped from a chat"},
}

// A denied call never reaches the upstream: the model reads the rule and
// its reason, and the ledger holds the denial. An allowed call beside it
// reaches the upstream with the host's argument bytes.
func TestWalk_DeniedCallNeverReachesUpstream(t *testing.T) {
	walk(t, func(t *testing.T) {
		p := newMemProxy(t, threeRules, [2]string{"notes", threeTools})
		h := startMemHost(t, p.Proxy)
		r := h.request("d", "tools/call", `{"name":"notes__drop_table","arguments":{"table":"users"}}`)
		if r.Error != nil || !strings.Contains(string(r.Result), `"isError":true`) || !strings.Contains(string(r.Result), "denied by rule 2: tables are never dropped from a chat") {
			t.Fatalf("got %+v %s; want a denial naming rule 2 and its reason", r.Error, r.Result)
		}
		if n := len(p.received(t, "notes", "tools/call")); n != 0 {
			t.Fatalf("upstream received %d tools/call; a denied call must not reach it", n)
		}
		r = h.request("a", "tools/call", `{"name":"notes__read_note","arguments":{"zeta":"z<>&","id":"n-1","big":9007199254740992,"f":1.50}}`)
		if r.Error != nil || strings.Contains(string(r.Result), `"isError":true`) {
			t.Fatalf("allowed call: %+v %s", r.Error, r.Result)
		}
		got := p.received(t, "notes", "tools/call")
		if len(got) != 1 || !strings.Contains(got[0], `"arguments":{"zeta":"z<>&","id":"n-1","big":9007199254740992,"f":1.50}`) {
			t.Fatalf("upstream got %v; want the host's argument bytes unchanged", got)
		}
		rows := p.calls(t)
		if len(rows) != 2 || rows[1].Tool != "drop_table" || rows[1].Decision != "deny" || rows[1].Rule != 2 || rows[1].State != "refused" ||
			rows[0].Tool != "read_note" || rows[0].Decision != "allow" {
			t.Fatalf("ledger: %+v", rows)
		}
	})
}

// Hidden and unknown names are JSON-RPC -32602, reach no upstream, and are
// recorded (a name mcp-go cannot tell from nothing, "", only logged); the
// allowed tool still works on the same connection.
func TestWalk_HiddenAndUnknownNamesRefused(t *testing.T) {
	walk(t, func(t *testing.T) {
		p := newMemProxy(t, threeRules, [2]string{"notes", threeTools})
		h := startMemHost(t, p.Proxy)
		names := []string{"notes__unclassified", "unclassified", "nope__read_note", "notes__read_note\u0000", ""}
		for i, name := range names {
			jname, _ := json.Marshal(name)
			r := h.request("c"+string(rune('0'+i)), "tools/call", `{"name":`+string(jname)+`,"arguments":{}}`)
			if r.Error == nil || r.Error.Code != -32602 {
				t.Fatalf("call to %q: got %+v %s; want JSON-RPC error -32602", name, r.Error, r.Result)
			}
		}
		if n := len(p.received(t, "notes", "tools/call")); n != 0 {
			t.Fatalf("upstream received %d tools/call for hidden or unknown names", n)
		}
		rows := p.calls(t)
		if len(rows) != len(names)-1 {
			t.Fatalf("ledger holds %d refusals, want %d: %+v", len(rows), len(names)-1, rows)
		}
		for _, row := range rows {
			if row.Decision != "unknown_tool" || row.State != "refused" {
				t.Errorf("refusal row %+v", row)
			}
			if row.Exposed == "notes__unclassified" && (row.Server != "notes" || !strings.Contains(row.Reason, "no rule matches it")) {
				t.Errorf("the hidden tool's row does not say why: %+v", row)
			}
		}
		if r := h.request("ok", "tools/call", `{"name":"notes__read_note","arguments":{"id":"1"}}`); r.Error != nil || len(p.received(t, "notes", "tools/call")) != 1 {
			t.Fatalf("allowed call after refusals: %+v %s", r.Error, r.Result)
		}
	})
}

// The upstream receives the argument bytes the gate checked and the ledger
// holds, exactly: spacing, escapes and number forms as the host sent them.
func TestWalk_UpstreamGetsTheCheckedBytesExactly(t *testing.T) {
	walk(t, func(t *testing.T) {
		p := newMemProxy(t, threeRules, [2]string{"notes", threeTools})
		h := startMemHost(t, p.Proxy)
		args := `{ "id" : "n\u002d1\/x" ,"n":1.50e0,  "s":"<&>" }`
		if r := h.request("1", "tools/call", `{"name":"notes__read_note","arguments":`+args+`}`); r.Error != nil || strings.Contains(string(r.Result), `"isError":true`) {
			t.Fatalf("call: %+v %s", r.Error, r.Result)
		}
		got := p.received(t, "notes", "tools/call")
		if len(got) != 1 || !strings.Contains(got[0], `"arguments":`+args) {
			t.Fatalf("upstream got %v; want the arguments byte for byte: %s", got, args)
		}
		if rows := p.calls(t); len(rows) != 1 || string(rows[0].Args) != args {
			t.Fatalf("ledger holds %+v; want the same bytes", rows)
		}
	})
}

// The host gets the server's result as the server wrote it: unknown content
// types, number forms, _meta and isError.
func TestWalk_ResultsPassThroughIntact(t *testing.T) {
	walk(t, func(t *testing.T) {
		result := `{"content":[{"type":"text","text":"a<b"},{"type":"hologram","frames":[1,2.50]}],"structuredContent":{"n":1.50,"big":12345678901234567890},"isError":true,"_meta":{"vendor/x":{"k":"v"}}}`
		p := newMemProxy(t, []classify.Rule{{Server: "res", Tool: "*", Class: classify.Read, Action: classify.Allow}},
			[2]string{"res", `{"tools":[{"name":"odd","inputSchema":{"type":"object"}}],"calls":{"odd":{"do":"result","result":` + result + `}}}`})
		h := startMemHost(t, p.Proxy)
		r := h.request("1", "tools/call", `{"name":"res__odd","arguments":{}}`)
		if r.Error != nil || string(r.Result) != result {
			t.Fatalf("host got %+v\n%s\nwant\n%s", r.Error, r.Result, result)
		}
	})
}

// mcp-guard's own ids toward an upstream are strings of its own ("g-…"),
// so the upstream's numeric ids never collide with them: its ping (id 0)
// is answered by mcp-guard, and answers to ids mcp-guard never sent are
// ignored while the calls go on.
func TestWalk_UpstreamIDsCannotCollide(t *testing.T) {
	walk(t, func(t *testing.T) {
		p := newMemProxy(t, []classify.Rule{{Server: "ids", Tool: "*", Class: classify.Read, Action: classify.Allow}},
			[2]string{"ids", `{"tools":[{"name":"ask","inputSchema":{"type":"object"}},{"name":"junk","inputSchema":{"type":"object"}}],
		"calls":{"ask":{"do":"serverRequest","method":"ping"},"junk":{"do":"badResponse"}}}`})
		h := startMemHost(t, p.Proxy)
		r := h.request("1", "tools/call", `{"name":"ids__ask","arguments":{}}`)
		if r.Error != nil || !strings.Contains(string(r.Result), `\"id\":0`) || !strings.Contains(string(r.Result), `\"result\":{}`) {
			t.Fatalf("upstream's ping (id 0) was not answered by mcp-guard: %+v %s", r.Error, r.Result)
		}
		if r := h.request("2", "tools/call", `{"name":"ids__junk","arguments":{"k":1}}`); r.Error != nil || strings.Contains(string(r.Result), `"isError":true`) {
			t.Fatalf("call after stray responses: %+v %s", r.Error, r.Result)
		}
		got := p.received(t, "ids", "tools/call")
		if len(got) != 2 {
			t.Fatalf("upstream got %d calls, want 2", len(got))
		}
		for _, line := range got {
			var m struct{ ID json.RawMessage }
			var id string
			if json.Unmarshal([]byte(line), &m) != nil || json.Unmarshal(m.ID, &id) != nil || !strings.HasPrefix(id, "g-") {
				t.Fatalf("mcp-guard used a non-string or unprefixed id: %s", line)
			}
		}
	})
}

// The upstream's progress reaches the host under the host's own token,
// before the result; the upstream sees a token of mcp-guard's, not the
// host's.
func TestWalk_ProgressReachesTheHost(t *testing.T) {
	walk(t, func(t *testing.T) {
		p := newMemProxy(t, []classify.Rule{{Server: "slow", Tool: "*", Class: classify.Read, Action: classify.Allow}},
			[2]string{"slow", `{"tools":[{"name":"work","inputSchema":{"type":"object"}}],"calls":{"work":{"do":"progress","count":3,"intervalMs":20}}}`})
		h := startMemHost(t, p.Proxy)
		if r := h.request("1", "tools/call", `{"name":"slow__work","arguments":{},"_meta":{"progressToken":"host-token-7"}}`); r.Error != nil {
			t.Fatal(r.Error)
		}
		got := h.notifications("notifications/progress")
		if len(got) != 3 {
			t.Fatalf("%d progress notifications before the result, want 3: %v", len(got), got)
		}
		for i, n := range got {
			var m struct {
				Params struct {
					ProgressToken string  `json:"progressToken"`
					Progress      float64 `json:"progress"`
					Total         float64 `json:"total"`
				} `json:"params"`
			}
			if json.Unmarshal([]byte(n), &m) != nil || m.Params.ProgressToken != "host-token-7" || m.Params.Progress != float64(i+1) || m.Params.Total != 3 {
				t.Fatalf("progress %d: %s", i, n)
			}
		}
		calls := p.received(t, "slow", "tools/call")
		if len(calls) != 1 || strings.Contains(calls[0], "host-token-7") || !strings.Contains(calls[0], `"progressToken":"p-`) {
			t.Fatalf("upstream call: %v", calls)
		}
	})
}

// mcp-guard offers hosts no tasks: initialize does not, a tool that can
// only run as a task is withheld, one that may is listed as the server
// defined it, and a task-augmented call to it runs as a plain call.
func TestWalk_TasksAreNotOffered(t *testing.T) {
	walk(t, func(t *testing.T) {
		p := newMemProxy(t, []classify.Rule{{Server: "tasky", Tool: "*", Class: classify.Read, Action: classify.Allow}},
			[2]string{"tasky", `{"capabilities":{"tools":{"listChanged":true},"tasks":{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}},
		"tools":[{"name":"must","execution":{"taskSupport":"required"},"inputSchema":{"type":"object"}},
		{"name":"may","execution":{"taskSupport":"optional"},"inputSchema":{"type":"object"}}]}`})
		h := startMemHost(t, p.Proxy)
		if h.init.Error != nil || strings.Contains(string(h.init.Result), "tasks") {
			t.Fatalf("initialize offered tasks to the host: %+v %s", h.init.Error, h.init.Result)
		}
		r := h.request("l", "tools/list", `{}`)
		if strings.Contains(string(r.Result), "tasky__must") || !strings.Contains(string(r.Result), "tasky__may") || !strings.Contains(string(r.Result), `"execution":{"taskSupport":"optional"}`) {
			t.Fatalf("tools/list: %s", r.Result)
		}
		r = h.request("c", "tools/call", `{"name":"tasky__may","arguments":{},"task":{"ttl":1000}}`)
		if r.Error != nil || strings.Contains(string(r.Result), "taskId") {
			t.Fatalf("a task-augmented call should run as a plain call: %+v %s", r.Error, r.Result)
		}
		if got := p.received(t, "tasky", "tools/call"); len(got) != 1 || strings.Contains(got[0], `"task"`) {
			t.Fatalf("upstream got %v; want one plain call", got)
		}
	})
}

// J3: a rule allows read_file only under /srv/ok; a host that adds a
// member differing only in case ("PATH", "pAtH", a U+212A spelling), or
// sends the folded name alone, is refused before any rule runs, its bytes
// recorded out of band and never forwarded; the exact names are forwarded,
// and a Go server reads from them the very path the rule checked.
func TestWalk_CaseFoldedArgumentNamesRefused(t *testing.T) {
	walk(t, func(t *testing.T) {
		rules := tomlRules(t, `
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
`, "fs")
		p := newMemProxyRules(t, rules, [2]string{"fs", `{"tools":[{"name":"read_file","inputSchema":{"type":"object","properties":{"path":{"type":"string"}}}},
{"name":"stat","inputSchema":{"type":"object"}}]}`})
		h := startMemHost(t, p.Proxy)
		refused := []struct{ tool, args string }{
			{"read_file", `{"path":"/srv/ok/a","PATH":"/etc/shadow"}`},
			{"read_file", `{"path":"/srv/ok/a","pAtH":"/etc/shadow"}`},
			{"read_file", `{"PATH":"/etc/shadow"}`},
			{"stat", `{"opts":{"kind":"file","` + "\u212a" + `ind":"socket"}}`},
			{"stat", `{"opts":{"Kind":"socket"}}`},
			{"stat", `{"opts":{"kind":"file"},"OPTS":{"kind":"socket"}}`},
		}
		for i, c := range refused {
			r := h.request("r"+strconv.Itoa(i), "tools/call", `{"name":"fs__`+c.tool+`","arguments":`+c.args+`}`)
			if !strings.Contains(string(r.Result), `"isError":true`) || !strings.Contains(string(r.Result), "differ") {
				t.Errorf("%s %s: not refused for its case-folded names: %+v %s", c.tool, c.args, r.Error, r.Result)
			}
		}
		if n := len(p.received(t, "fs", "tools/call")); n != 0 {
			t.Fatalf("%d calls with case-folded names reached the upstream", n)
		}
		invalid := map[string]bool{}
		for _, row := range p.calls(t) {
			if row.Decision == "invalid" && row.Args == nil {
				invalid[string(row.ArgsInvalid)] = true
			}
		}
		for _, c := range refused {
			if !invalid[c.args] {
				t.Errorf("no invalid row holds %s verbatim out of band", c.args)
			}
		}
		for i, args := range []string{`{"name":"fs__read_file","arguments":{"path":"/srv/ok/a","paths":"x"}}`, `{"name":"fs__stat","arguments":{"opts":{"kind":"dir"}}}`} {
			if r := h.request("a"+strconv.Itoa(i), "tools/call", args); r.Error != nil || strings.Contains(string(r.Result), `"isError":true`) {
				t.Fatalf("exact names refused: %+v %s", r.Error, r.Result)
			}
		}
		got := p.received(t, "fs", "tools/call")
		if len(got) != 2 {
			t.Fatalf("%d calls reached the upstream, want 2", len(got))
		}
		var call struct {
			Params struct {
				Arguments struct{ Path string } `json:"arguments"`
			} `json:"params"`
		}
		if err := json.Unmarshal([]byte(got[0]), &call); err != nil || call.Params.Arguments.Path != "/srv/ok/a" {
			t.Fatalf("a Go server reads path %q (%v) from %s", call.Params.Arguments.Path, err, got[0])
		}
	})
}

// Arguments are validated against the pinned schema: invalid ones come back
// to the model naming the path, and reach nothing.
func TestWalk_ArgumentsValidatedAgainstThePinnedSchema(t *testing.T) {
	walk(t, func(t *testing.T) {
		script := `{"tools":[{"name":"write","inputSchema":{"type":"object","properties":{"path":{"type":"string","minLength":1},"mode":{"enum":["append","overwrite"]}},"required":["path"],"additionalProperties":false}}]}`
		p := newMemProxy(t, allRules, [2]string{"fs", script})
		h := startMemHost(t, p.Proxy)
		r := h.request("bad", "tools/call", `{"name":"fs__write","arguments":{"path":"","mode":"truncate"}}`)
		if r.Error != nil || !strings.Contains(string(r.Result), `"isError":true`) || !strings.Contains(string(r.Result), "at /path") || !strings.Contains(string(r.Result), "at /mode") {
			t.Fatalf("invalid arguments: %+v %s", r.Error, r.Result)
		}
		if n := len(p.received(t, "fs", "tools/call")); n != 0 {
			t.Fatalf("invalid arguments reached the upstream")
		}
		if r := h.request("good", "tools/call", `{"name":"fs__write","arguments":{"path":"/a","mode":"append"}}`); r.Error != nil || strings.Contains(string(r.Result), `"isError":true`) {
			t.Fatalf("valid arguments: %+v %s", r.Error, r.Result)
		}
		rows := p.calls(t)
		if len(rows) != 2 || rows[1].Decision != "invalid" || !strings.Contains(rows[1].Reason, "at /path") {
			t.Fatalf("ledger rows %+v", rows)
		}
	})
}

// A host that gives up does not keep what the upstream did out of the
// ledger: the upstream's late answer is appended as a late outcome.
func TestWalk_HostCancelStillRecordsTheUpstreamOutcome(t *testing.T) {
	walk(t, func(t *testing.T) {
		p := newMemProxy(t, allRules, [2]string{"db", `{"tools":[{"name":"late","inputSchema":{"type":"object"}}],"calls":{"late":{"do":"echo","delayMs":800}}}`})
		h := startMemHost(t, p.Proxy)
		h.send(`{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"db__late","arguments":{}}}`)
		time.Sleep(200 * time.Millisecond)
		h.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c","reason":"the host gave up"}}`)
		eventually(t, "the late outcome", func() bool { return p.call(t, "late").Late != nil })
		row := p.call(t, "late")
		if row.State != "cancelled" || row.Late.ResultBytes == 0 || len(row.Late.ResultDigest) != 64 {
			t.Fatalf("row %+v late %+v", row, row.Late)
		}
		time.Sleep(time.Second)
		h.mu.Lock()
		_, answered := h.got[`"c"`]
		h.mu.Unlock()
		if answered {
			t.Fatal("the cancelled call was answered")
		}
	})
}

// A host line that is not JSON is answered with a parse error (id null),
// reaches no upstream and leaves nothing in the ledger; the session goes
// on.
func TestWalk_UnreadableHostLineAnsweredAndSessionGoesOn(t *testing.T) {
	walk(t, func(t *testing.T) {
		p := newMemProxy(t, threeRules, [2]string{"notes", threeTools})
		h := startMemHost(t, p.Proxy)
		h.send(`{"jsonrpc":"2.0","id":"x","method":"tools/call",`)
		eventually(t, "the parse error", func() bool {
			h.mu.Lock()
			defer h.mu.Unlock()
			r, ok := h.got["null"]
			return ok && r.Error != nil && r.Error.Code == -32700 && strings.Contains(r.Error.Message, "not one JSON object")
		})
		if r := h.request("a", "tools/call", `{"name":"notes__read_note","arguments":{"id":"n-1"}}`); r.Error != nil || strings.Contains(string(r.Result), `"isError":true`) {
			t.Fatalf("a call after the unreadable line: %+v %s", r.Error, r.Result)
		}
		if n := len(p.received(t, "notes", "tools/call")); n != 1 {
			t.Fatalf("upstream received %d calls; want only the readable one", n)
		}
		if rows := p.calls(t); len(rows) != 1 {
			t.Fatalf("ledger rows %+v; want only the readable call's", rows)
		}
	})
}

// A tools/call over stdio is answered under the id the host sent, byte for
// byte, even a number no float64 holds. Calls out of the ordinary (other
// _meta) still work, served by mcp-go instead; every allowed call reaches
// the upstream once, and every call has its ledger row.
func TestWalk_ToolsCallAnsweredUnderTheHostsExactID(t *testing.T) {
	walk(t, func(t *testing.T) {
		p := newMemProxy(t, dbRules, [2]string{"db", confirmTools})
		h := startMemHost(t, p.Proxy)
		for _, c := range []struct{ what, id, params string }{
			{"a call with id 2^53+1", `9007199254740993`, `{"name":"db__echo","arguments":{"n":1}}`},
			{"a call with a string id and a progress token", `"s-1"`, `{"name":"db__echo","arguments":{"n":2},"_meta":{"progressToken":"p-1"}}`},
			{"a call with other _meta", `7`, `{"name":"db__echo","arguments":{"n":3},"_meta":{"progressToken":"p-2","vendor.example/trace":"x"}}`},
			{"a denied call", `8`, `{"name":"db__drop","arguments":{}}`},
		} {
			h.send(`{"jsonrpc":"2.0","id":` + c.id + `,"method":"tools/call","params":` + c.params + `}`)
			if line := h.answerTo(c.id); memberOf(line, "error") != "" || memberOf(line, "result") == "" {
				t.Fatalf("answer to %s: %s", c.what, line)
			}
		}
		if n := len(p.received(t, "db", "tools/call")); n != 3 {
			t.Fatalf("the upstream got %d calls, want the 3 allowed ones", n)
		}
		states := map[string]int{}
		rows := p.calls(t)
		for _, row := range rows {
			states[row.Exposed+" "+row.Decision]++
		}
		if len(rows) != 4 || states["db__echo allow"] != 3 || states["db__drop deny"] != 1 {
			t.Fatalf("ledger rows: %v", states)
		}
	})
}
