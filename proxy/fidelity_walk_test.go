package proxy

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/mcp-guard/mcp-guard/config"
	"github.com/mcp-guard/mcp-guard/gate"
)

// What passes through mcp-guard arrives as the server sent it: these walks
// compare what the host received with what the fake upstream sent, byte
// for byte, after undoing only the name or URI mcp-guard rewrites.

// fidelityDB lists tools, prompts, resources and templates out of
// alphabetical order, with members in an unusual order and fields mcp-go's
// types drop (execution.taskSupport, required:false, vendor fields), and
// text encoding/json would HTML-escape.
const fidelityDB = `{
"tools":[
 {"inputSchema":{"type":"object","properties":{"zz":{"type":"string"},"aa":{"type":"string"}}},"name":"zeta","description":"z <b> & co","execution":{"taskSupport":"optional"},"x-vendor":{"k":2}},
 {"name":"alpha","title":"A","annotations":{"readOnlyHint":true,"x-custom":"y"},"inputSchema":{"type":"object"}},
 {"name":"prog","inputSchema":{"type":"object"}}],
"prompts":[
 {"name":"pz","description":"d","arguments":[{"name":"q","required":false,"description":"q <"}]},
 {"name":"pa"}],
"resources":[
 {"uri":"file:///z.txt","name":"z"},
 {"name":"a","uri":"file:///a.txt","mimeType":"text/plain"}],
"resourceTemplates":[
 {"uriTemplate":"file:///t/{x}","name":"t","x-order":1}],
"completion":{"completion":{"values":["b","a"],"hasMore":false,"total":2},"_meta":{"z":1,"a":2}},
"calls":{"zeta":{"do":"result","result":` + fidelityToolResult + `},"prog":{"do":"progress","count":2}}}`

// fidelityToolResult is what db__zeta answers: member order, a false
// isError and a vendor member mcp-go's types would drop, text it would
// escape.
const fidelityToolResult = `{"content":[{"type":"text","text":"a <b> & c"}],"structuredContent":{"z":1,"a":2},"isError":false,"x-extra":{"k":1}}`

// fidelityCalls are requests whose results must be the server's own bytes
// (a read's uri mapped), each with that result.
var fidelityCalls = []struct{ what, method, params, want string }{
	{"tools/call", "tools/call", `{"name":"db__zeta","arguments":{}}`, fidelityToolResult},
	{"tools/call through mcp-go", "tools/call", `{"name":"db__zeta","arguments":{},"_meta":{"x-trace":"1"}}`, fidelityToolResult},
	{"tools/call with progress (an event stream over HTTP)", "tools/call", `{"name":"db__prog","arguments":{"z":"<"},"_meta":{"progressToken":"p1"}}`,
		`{"content":[{"type":"text","text":"{\"z\":\"<\"}"}],"structuredContent":{"arguments":{"z":"<"},"tool":"prog"}}`},
	{"prompts/get", "prompts/get", `{"name":"db__pz","arguments":{"q":"x"}}`,
		`{"description":"fake prompt pz","messages":[{"role":"user","content":{"type":"text","text":"prompt pz arguments {\"q\":\"x\"}"}}]}`},
	{"resources/read", "resources/read", `{"uri":"mcp-guard://db/file:///z.txt"}`,
		`{"contents":[{"uri":"mcp-guard://db/file:///z.txt","mimeType":"text/plain","text":"read file:///z.txt"}]}`},
}

// fidelityAA is a second server, after db in the config: its tools come
// after db's, in its own order.
const fidelityAA = `{"tools":[
 {"name":"b","inputSchema":{"type":"object"}},
 {"name":"a","inputSchema":{"type":"object"}}]}`

// promptRules allow every tool, and db's prompts.
const promptRules = `
[[rule]]
server = "*"
tool = "*"
class = "read"
action = "allow"

[[rule]]
server = "db"
prompt = "*"
action = "allow"
`

// fidelityRules are promptRules and db's file resources.
const fidelityRules = promptRules + `
[[rule]]
server = "db"
resource = "file:///**"
action = "allow"
`

// fidelityWant is what the host must receive for each list request: every
// item's own bytes, its name or URI rewritten in place, servers in config
// order and each server's items in its order.
func fidelityWant(t *testing.T) map[string][]string {
	t.Helper()
	items := func(script, key string) []string {
		var s map[string]json.RawMessage
		var list []json.RawMessage
		if err := json.Unmarshal([]byte(script), &s); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(s[key], &list); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, it := range list {
			out = append(out, string(it))
		}
		return out
	}
	rename := func(list []string, from, to string) []string {
		for i, it := range list {
			list[i] = strings.Replace(it, from, to, 1)
		}
		return list
	}
	db, aa := items(fidelityDB, "tools"), items(fidelityAA, "tools")
	rename(db[:1], `"name":"zeta"`, `"name":"db__zeta"`)
	rename(db[1:2], `"name":"alpha"`, `"name":"db__alpha"`)
	rename(db[2:], `"name":"prog"`, `"name":"db__prog"`)
	rename(aa[:1], `"name":"b"`, `"name":"aa__b"`)
	rename(aa[1:], `"name":"a"`, `"name":"aa__a"`)
	prompts := items(fidelityDB, "prompts")
	rename(prompts[:1], `"name":"pz"`, `"name":"db__pz"`)
	rename(prompts[1:], `"name":"pa"`, `"name":"db__pa"`)
	res := items(fidelityDB, "resources")
	for i := range res {
		res[i] = strings.Replace(res[i], `"uri":"file:///`, `"uri":"mcp-guard://db/file:///`, 1)
	}
	tm := rename(items(fidelityDB, "resourceTemplates"), `"uriTemplate":"file:///`, `"uriTemplate":"mcp-guard://db/file:///`)
	return map[string][]string{
		"tools/list":               append(db, aa...),
		"prompts/list":             prompts,
		"resources/list":           res,
		"resources/templates/list": tm,
	}
}

var fidelityListKey = map[string]string{"tools/list": "tools", "prompts/list": "prompts", "resources/list": "resources", "resources/templates/list": "resourceTemplates"}

// fidelityCompleteParams are the completion/complete the host sends, and the
// result it must get: the server's own, byte for byte.
const (
	fidelityCompleteParams = `{"ref":{"type":"ref/prompt","name":"db__pz"},"argument":{"name":"q","value":""}}`
	fidelityCompResp       = `{"completion":{"values":["b","a"],"hasMore":false,"total":2},"_meta":{"z":1,"a":2}}`
)

// checkList compares a list result with what the servers listed.
func checkList(t *testing.T, transport, method string, result json.RawMessage, want []string) {
	t.Helper()
	var r map[string][]json.RawMessage
	if err := json.Unmarshal(result, &r); err != nil {
		t.Fatalf("%s %s: %v in %s", transport, method, err, result)
	}
	got := r[fidelityListKey[method]]
	if len(got) != len(want) {
		t.Fatalf("%s %s: %d items, want %d:\n%s", transport, method, len(got), len(want), result)
	}
	for i := range want {
		if string(got[i]) != want[i] {
			t.Errorf("%s %s item %d:\n got  %s\n want %s", transport, method, i, got[i], want[i])
		}
	}
}

// memberOf is the member name of the JSON object in line, as its bytes.
func memberOf(line, name string) string {
	var m map[string]json.RawMessage
	json.Unmarshal([]byte(line), &m)
	return string(m[name])
}

// responseTo is the answer to the request with id (its JSON) among msgs.
func responseTo(t *testing.T, msgs []rpcMsg, id string) rpcMsg {
	t.Helper()
	for _, m := range msgs {
		if string(m.ID) == id && m.Method == "" {
			return m
		}
	}
	t.Fatalf("no response with id %s in %d messages", id, len(msgs))
	return rpcMsg{}
}

// Lists, completions and results reach the host as the servers' own
// bytes, over stdio and HTTP.
func TestWalk_ListsAndCompletionsAreTheServersOwnBytes(t *testing.T) {
	methods := []string{"tools/list", "prompts/list", "resources/list", "resources/templates/list"}
	proxy := func(t *testing.T) *memProxy {
		return newMemProxyRules(t, tomlRules(t, fidelityRules, "db", "aa"), [2]string{"db", fidelityDB}, [2]string{"aa", fidelityAA})
	}
	t.Run("stdio", func(t *testing.T) {
		walk(t, func(t *testing.T) {
			h := startMemHost(t, proxy(t).Proxy)
			want := fidelityWant(t)
			for i, m := range methods {
				checkList(t, "stdio", m, h.request("l"+itoa(i), m, `{}`).Result, want[m])
			}
			if got := string(h.request("c", "completion/complete", fidelityCompleteParams).Result); got != fidelityCompResp {
				t.Errorf("stdio completion:\n got  %s\n want %s", got, fidelityCompResp)
			}
			for i, c := range fidelityCalls {
				if got := string(h.request("r"+itoa(i), c.method, c.params).Result); got != c.want {
					t.Errorf("stdio %s:\n got  %s\n want %s", c.what, got, c.want)
				}
			}
		})
	})
	t.Run("http", func(t *testing.T) {
		walk(t, func(t *testing.T) {
			h := startHTTPHost(t, proxy(t).Proxy).session(initBody)
			want := fidelityWant(t)
			ask := func(id, method, params string) string {
				_, msgs := h.post(`{"jsonrpc":"2.0","id":` + id + `,"method":"` + method + `","params":` + params + `}`)
				return memberOf(responseTo(t, msgs, id).line, "result")
			}
			for i, m := range methods {
				checkList(t, "http", m, json.RawMessage(ask(itoa(i+10), m, `{}`)), want[m])
			}
			if got := ask(`"c"`, "completion/complete", fidelityCompleteParams); got != fidelityCompResp {
				t.Errorf("http completion:\n got  %s\n want %s", got, fidelityCompResp)
			}
			for i, c := range fidelityCalls {
				if got := ask(itoa(i+20), c.method, c.params); got != c.want {
					t.Errorf("http %s:\n got  %s\n want %s", c.what, got, c.want)
				}
			}
		})
	})
}

// itoa is i in decimal.
func itoa(i int) string { return strconv.Itoa(i) }

// An elicitation form reaches the host with its fields in the server's
// order, not re-encoded from a map.
func TestWalk_ElicitationFormKeepsTheServersOrder(t *testing.T) {
	walk(t, func(t *testing.T) {
		const schema = `{"type":"object","properties":{"zname":{"type":"string","title":"Z"},"age":{"type":"number"},"middle":{"type":"boolean"}},"required":["zname"]}`
		p := newMemProxyGate(t, dbMayAsk(t, gate.ClientAccess{Elicitation: config.AccessAllow}), nil, [2]string{"db", `{"tools":[{"name":"ask","inputSchema":{"type":"object"}}],
"calls":{"ask":{"do":"serverRequest","method":"elicitation/create","params":{"message":"who are you","requestedSchema":` + schema + `}}}}`})
		h := startMemHostCaps(t, p.Proxy, `{"elicitation":{}}`)
		h.send(`{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"db__ask","arguments":{}}}`)
		req := h.waitMethod("elicitation/create")
		if got := memberOf(string(req.Params), "requestedSchema"); got != schema {
			t.Fatalf("the host got the form\n %s\nwant the server's\n %s", got, schema)
		}
		h.send(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":{"action":"decline"}}`)
		h.answerLine("a")
	})
}

// A server's log message reaches the host with its data as the server
// wrote it (member order, a number beyond a float64), strings escaped.
func TestWalk_LogDataKeepsTheServersOrder(t *testing.T) {
	walk(t, func(t *testing.T) {
		const data = `{"z":1,"a":{"y":"two","b":12345678901234567890},"m":"esc\u001b"}`
		line := `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":` + data + `}}`
		b, _ := json.Marshal(map[string]any{
			"tools": []any{map[string]any{"name": "noisy", "inputSchema": map[string]any{"type": "object"}}},
			"calls": map[string]any{"noisy": map[string]any{"do": "notify", "lines": []string{line}}},
		})
		h := startMemHost(t, newMemProxy(t, allowAll, [2]string{"db", string(b)}).Proxy)
		h.send(`{"jsonrpc":"2.0","id":"n","method":"tools/call","params":{"name":"db__noisy","arguments":{}}}`)
		m := h.waitMethod("notifications/message")
		if want := `{"z":1,"a":{"y":"two","b":12345678901234567890},"m":"esc\\u{001B}"}`; memberOf(string(m.Params), "data") != want {
			t.Fatalf("the host got data\n %s\nwant\n %s", memberOf(string(m.Params), "data"), want)
		}
	})
}

// serverErrorScript answers calls and a prompt with the server's own
// JSON-RPC errors: one plain, one whose text needs escaping, one asking
// for a URL elicitation (-32042).
const serverErrorScript = `{"tools":[
 {"name":"boom","inputSchema":{"type":"object"}},
 {"name":"esc","inputSchema":{"type":"object"}},
 {"name":"url","inputSchema":{"type":"object"}}],
"prompts":[{"name":"p"}],
"errorFor":{"prompts/get":{"code":-32602,"message":"missing <arg> & more"}},
"calls":{
 "boom":{"do":"error","code":-32602,"message":"bad <arg> \u00e9","data":{"z":1,"a":"x"}},
 "esc":{"do":"error","code":-32000,"message":"a\u001b[31mred","data":{"k":"\u202eevil","n":12345678901234567890}},
 "url":{"do":"error","code":-32042,"message":"open this","data":{"elicitations":[{"mode":"url","url":"https://evil.example","elicitationId":"e","message":"m"}]}}}}`

// serverErrorWant is, for each request, the error object the host must get.
var serverErrorWant = []struct{ what, params, want string }{
	{"tools/call (fast path)", `{"name":"db__boom","arguments":{}}`, `{"code":-32602,"message":"bad <arg> é","data":{"z":1,"a":"x"}}`},
	{"tools/call (through mcp-go)", `{"name":"db__boom","arguments":{},"_meta":{"x-trace":"1"}}`, `{"code":-32602,"message":"bad <arg> é","data":{"z":1,"a":"x"}}`},
	{"tools/call, text escaped in place", `{"name":"db__esc","arguments":{}}`, `{"code":-32000,"message":"a\\u{001B}[31mred","data":{"k":"\\u{202E}evil","n":12345678901234567890}}`},
	{"prompts/get", `{"name":"db__p"}`, `{"code":-32602,"message":"missing <arg> & more"}`},
}

// A server's own JSON-RPC error reaches the host as the server wrote it,
// over stdio (the fast path and mcp-go) and HTTP, its text escaped in
// place where it must be; a -32042 (URL elicitation required) does not:
// the host gets mcp-guard's -32603 naming it.
func TestWalk_ServerErrorsAreTheServersOwn(t *testing.T) {
	method := func(params string) string {
		if strings.Contains(params, "db__p\"") {
			return "prompts/get"
		}
		return "tools/call"
	}
	check := func(t *testing.T, ask func(id, method, params string) string) {
		for i, c := range serverErrorWant {
			if got := memberOf(ask(itoa(i+1), method(c.params), c.params), "error"); got != c.want {
				t.Errorf("%s: the host got the error\n %s\nwant the server's\n %s", c.what, got, c.want)
			}
		}
		got := memberOf(ask("99", "tools/call", `{"name":"db__url","arguments":{}}`), "error")
		if !strings.HasPrefix(got, `{"code":-32603,"message":"mcp-guard: db__url: its server answered with error -32042`) {
			t.Errorf("a -32042 from the server reached the host as %s", got)
		}
	}
	proxy := func(t *testing.T) *memProxy {
		return newMemProxyRules(t, tomlRules(t, promptRules, "db"), [2]string{"db", serverErrorScript})
	}
	t.Run("stdio", func(t *testing.T) {
		walk(t, func(t *testing.T) {
			h := startMemHost(t, proxy(t).Proxy)
			check(t, func(id, method, params string) string {
				h.send(`{"jsonrpc":"2.0","id":"` + id + `","method":"` + method + `","params":` + params + `}`)
				return h.answerLine(id)
			})
		})
	})
	t.Run("http", func(t *testing.T) {
		walk(t, func(t *testing.T) {
			h := startHTTPHost(t, proxy(t).Proxy).session(initBody)
			check(t, func(id, method, params string) string {
				_, msgs := h.post(`{"jsonrpc":"2.0","id":` + id + `,"method":"` + method + `","params":` + params + `}`)
				return responseTo(t, msgs, id).line
			})
		})
	})
}
