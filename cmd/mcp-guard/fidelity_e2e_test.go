package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// What passes through mcp-guard arrives as the server sent it: these tests
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

const fidelityRules = allowAll + `
[[rule]]
server = "db"
prompt = "*"
action = "allow"

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

// fidelityCompletion is the completion/complete the host sends, and the
// result it must get: the server's own, byte for byte.
const (
	fidelityComplete = `"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"db__pz"},"argument":{"name":"q","value":""}}}`
	fidelityCompResp = `{"completion":{"values":["b","a"],"hasMore":false,"total":2},"_meta":{"z":1,"a":2}}`
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

func TestFidelity_ListsAndCompletionsAreTheServersOwnBytes(t *testing.T) {
	e := newEnv(t)
	cfg := e.config(e.fake("db", fidelityDB), e.fake("aa", fidelityAA), fidelityRules)
	want := fidelityWant(t)
	methods := []string{"tools/list", "prompts/list", "resources/list", "resources/templates/list"}

	t.Run("stdio", func(t *testing.T) {
		r := e.rawConnect(cfg)
		for i, m := range methods {
			id := itoa(int64(i + 10))
			r.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"` + m + `"}`)
			checkList(t, "stdio", m, r.waitID(id).Result, want[m])
		}
		r.send(`{"jsonrpc":"2.0","id":"c",` + fidelityComplete)
		if got := string(r.waitID(`"c"`).Result); got != fidelityCompResp {
			t.Errorf("stdio completion:\n got  %s\n want %s", got, fidelityCompResp)
		}
		for i, c := range fidelityCalls {
			id := itoa(int64(i + 20))
			r.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"` + c.method + `","params":` + c.params + `}`)
			if got := string(r.waitID(id).Result); got != c.want {
				t.Errorf("stdio %s:\n got  %s\n want %s", c.what, got, c.want)
			}
		}
	})
	t.Run("http", func(t *testing.T) {
		h := e.rawHTTPConnect(cfg)
		for i, m := range methods {
			id := itoa(int64(i + 10))
			_, msgs := h.post(`{"jsonrpc":"2.0","id":` + id + `,"method":"` + m + `"}`)
			checkList(t, "http", m, responseTo(t, msgs, id).Result, want[m])
		}
		_, msgs := h.post(`{"jsonrpc":"2.0","id":"c",` + fidelityComplete)
		if got := string(responseTo(t, msgs, `"c"`).Result); got != fidelityCompResp {
			t.Errorf("http completion:\n got  %s\n want %s", got, fidelityCompResp)
		}
		for i, c := range fidelityCalls {
			id := itoa(int64(i + 20))
			_, msgs := h.post(`{"jsonrpc":"2.0","id":` + id + `,"method":"` + c.method + `","params":` + c.params + `}`)
			if got := string(responseTo(t, msgs, id).Result); got != c.want {
				t.Errorf("http %s:\n got  %s\n want %s", c.what, got, c.want)
			}
		}
	})
}

// rawHTTP is a host speaking JSON-RPC to mcp-guard serve --http directly.
type rawHTTP struct {
	t        testing.TB
	endpoint string
	sid      string
	stderr   *lockedBuffer
}

// rawHTTPConnect starts serve --http on cfg and initializes one session.
func (e *env) rawHTTPConnect(cfg string) *rawHTTP {
	e.t.Helper()
	return e.rawHTTPInit(cfg, initBody)
}

// rawHTTPInit starts serve --http on cfg with flags and initializes one
// session with the initialize request init.
func (e *env) rawHTTPInit(cfg, init string, flags ...string) *rawHTTP {
	e.t.Helper()
	endpoint, stderr := e.httpServe(cfg, append([]string{"--http", "127.0.0.1:0"}, flags...)...)
	h := &rawHTTP{t: e.t, endpoint: endpoint, stderr: stderr}
	h.initialize(init)
	return h
}

// another initializes one more session of the same serve.
func (h *rawHTTP) another() *rawHTTP {
	h.t.Helper()
	n := &rawHTTP{t: h.t, endpoint: h.endpoint, stderr: h.stderr}
	n.initialize(initBody)
	return n
}

func (h *rawHTTP) initialize(init string) {
	h.t.Helper()
	resp := h.do(http.MethodPost, init, nil)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	h.sid = resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || h.sid == "" {
		h.t.Fatalf("initialize over HTTP: %d, session %q", resp.StatusCode, h.sid)
	}
	if code, _ := h.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`); code != http.StatusAccepted {
		h.t.Fatalf("notifications/initialized: HTTP %d", code)
	}
}

func (h *rawHTTP) do(method, body string, header map[string]string) *http.Response {
	h.t.Helper()
	resp, err := h.send(method, body, header)
	if err != nil {
		h.t.Fatal(err)
	}
	return resp
}

// send is do for any goroutine: it returns the error.
func (h *rawHTTP) send(method, body string, header map[string]string) (*http.Response, error) {
	req, err := http.NewRequest(method, h.endpoint, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	if h.sid != "" {
		req.Header.Set("Mcp-Session-Id", h.sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	for k, v := range header {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	return http.DefaultClient.Do(req)
}

// post sends one body in the session and returns the status and every
// JSON-RPC message of the answer, whether JSON or an event stream.
func (h *rawHTTP) post(body string) (int, []rpcMsg) {
	h.t.Helper()
	resp := h.do(http.MethodPost, body, nil)
	defer resp.Body.Close()
	return resp.StatusCode, readMessages(resp)
}

// readMessages is every JSON-RPC message of an answer to a POST, whether
// JSON or an event stream.
func readMessages(resp *http.Response) []rpcMsg {
	var msgs []rpcMsg
	add := func(line string) {
		var m rpcMsg
		if json.Unmarshal([]byte(line), &m) == nil {
			m.line = line
			msgs = append(msgs, m)
		}
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				add(d)
			}
		}
	} else {
		b, _ := io.ReadAll(resp.Body)
		if len(strings.TrimSpace(string(b))) > 0 {
			add(strings.TrimSpace(string(b)))
		}
	}
	return msgs
}

// responseTo is the response with the raw id among msgs.
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

// An elicitation form reaches the host with its fields in the server's
// order, not re-encoded from a map.
func TestFidelity_ElicitationFormKeepsTheServersOrder(t *testing.T) {
	e := newEnv(t)
	const schema = `{"type":"object","properties":{"zname":{"type":"string","title":"Z"},"age":{"type":"number"},"middle":{"type":"boolean"}},"required":["zname"]}`
	srv := e.fake("db", `{"tools":[{"name":"ask","inputSchema":{"type":"object"}}],
"calls":{"ask":{"do":"serverRequest","method":"elicitation/create","params":{"message":"who are you","requestedSchema":`+schema+`}}}}`,
		`allow_elicitation = true`)
	r := e.rawConnectCaps(e.config(srv, allowAll), `{"elicitation":{}}`)
	r.send(`{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"db__ask","arguments":{}}}`)
	req := r.waitMethod("elicitation/create")
	got, _ := json.Marshal(struct{}{})
	var p map[string]json.RawMessage
	if err := json.Unmarshal(req.Params, &p); err == nil {
		got = p["requestedSchema"]
	}
	if string(got) != schema {
		t.Fatalf("the host got the form\n %s\nwant the server's\n %s", got, schema)
	}
	r.send(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,"result":{"action":"decline"}}`)
	r.waitID(`"a"`)
}

// waitMethod reads lines until a request or notification of method.
func (r *rawHost) waitMethod(method string) rpcMsg {
	r.t.Helper()
	ch := make(chan rpcMsg, 1)
	go func() {
		for {
			line, err := r.out.ReadString('\n')
			if err != nil {
				close(ch)
				return
			}
			var m rpcMsg
			if json.Unmarshal([]byte(line), &m) == nil && m.Method == method {
				m.line = strings.TrimSpace(line)
				ch <- m
				return
			}
		}
	}()
	select {
	case m, ok := <-ch:
		if !ok {
			r.t.Fatalf("mcp-guard's stdout ended before %s\nstderr:\n%s", method, r.stderr)
		}
		return m
	case <-time.After(20 * time.Second):
		r.t.Fatalf("no %s\nstderr:\n%s", method, r.stderr)
	}
	return rpcMsg{}
}

// namespace = false: a server served alone keeps its own tool and prompt
// names (rules and pins are unchanged: the call is recorded as db/echo);
// with other servers, check and serve refuse it, naming the server, and
// check --server and serve --server take it.
func TestFidelity_NamespaceFalseOnlyWhenServedAlone(t *testing.T) {
	e := newEnv(t)
	db := e.fake("db", `{"tools":[{"name":"echo","inputSchema":{"type":"object"}}],"prompts":[{"name":"greet"}]}`, `namespace = false`)
	rules := allowAll + "\n[[rule]]\nserver = \"db\"\nprompt = \"*\"\naction = \"allow\"\n"

	two := e.config(db, e.fake("aa", `{"tools":[{"name":"echo","inputSchema":{"type":"object"}}]}`), rules)
	for _, args := range [][]string{{"check", "--config", two}, {"serve", "--config", two}} {
		out, code := e.mcpGuard(args...)
		if code != 2 || !strings.Contains(out, "server[1] (db).namespace: false is honoured only when db is served alone") {
			t.Fatalf("%s of two servers, one namespace = false: exit %d\n%s", args[0], code, out)
		}
	}
	if out, code := e.mcpGuard("check", "--config", two, "--server", "db"); code != 0 {
		t.Fatalf("check --server db: exit %d\n%s", code, out)
	}

	one := filepath.Join(e.dir, "one.toml") // beside two, same ledger
	writeFile(t, one, fmt.Sprintf("startup_wait = \"60s\"\n\n[ledger]\npath = %q\n\n%s\n%s", filepath.Join(e.state, "ledger.db"), db, rules))
	for _, c := range []struct {
		what string
		args []string
	}{
		{"serve --server db", []string{"serve", "--config", two, "--server", "db"}},
		{"a one-server config", []string{"serve", "--config", one}},
	} {
		t.Run(c.what, func(t *testing.T) {
			h := e.connectArgs(c.args...)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			tools, err := h.ListTools(ctx, nil)
			if err != nil || len(tools.Tools) != 1 || tools.Tools[0].Name != "echo" {
				t.Fatalf("tools: %v %v; want echo under its own name", tools, err)
			}
			prompts, err := h.ListPrompts(ctx, nil)
			if err != nil || len(prompts.Prompts) != 1 || prompts.Prompts[0].Name != "greet" {
				t.Fatalf("prompts: %v %v; want greet under its own name", prompts, err)
			}
			if res, err := h.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{}}); err != nil || res.IsError {
				t.Fatalf("call echo: %v %v", res, err)
			}
			if res, err := h.CallTool(ctx, &mcp.CallToolParams{Name: "db__echo", Arguments: map[string]any{}}); err == nil && !res.IsError {
				t.Fatal("the prefixed name was served too")
			}
			row := e.callsByTool(e.openLedger())["echo"]
			if row.Server != "db" || row.Tool != "echo" || row.Decision != "allow" {
				t.Fatalf("ledger row %+v; want db/echo allowed", row)
			}
		})
	}
}

// connectArgs connects the go-sdk client to mcp-guard run with args.
func (e *env) connectArgs(args ...string) *mcp.ClientSession {
	e.t.Helper()
	cmd := e.serveCmd("")
	cmd.Args = append([]string{bins.guard}, args...)
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-host", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 5 * time.Second}, nil)
	if err != nil {
		e.t.Fatalf("connect to mcp-guard %v: %v\nstderr:\n%s", args, err, stderr)
	}
	e.t.Cleanup(func() {
		s.Close()
		if e.t.Failed() {
			e.t.Logf("mcp-guard stderr:\n%s", stderr)
		}
	})
	return s
}

// A server's log message reaches the host with its data as the server
// wrote it (member order, a number beyond a float64), strings escaped.
func TestFidelity_LogDataKeepsTheServersOrder(t *testing.T) {
	e := newEnv(t)
	const data = `{"z":1,"a":{"y":"two","b":12345678901234567890},"m":"esc\u001b"}`
	line := `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":` + data + `}}`
	b, _ := json.Marshal(map[string]any{
		"tools": []any{map[string]any{"name": "noisy", "inputSchema": map[string]any{"type": "object"}}},
		"calls": map[string]any{"noisy": map[string]any{"do": "notify", "lines": []string{line}}},
	})
	r := e.rawConnect(e.config(e.fake("db", string(b)), allowAll))
	r.send(`{"jsonrpc":"2.0","id":"n","method":"tools/call","params":{"name":"db__noisy","arguments":{}}}`)
	m := r.waitMethod("notifications/message")
	var p map[string]json.RawMessage
	if err := json.Unmarshal(m.Params, &p); err != nil {
		t.Fatal(err)
	}
	if want := `{"z":1,"a":{"y":"two","b":12345678901234567890},"m":"esc\\u{001B}"}`; string(p["data"]) != want {
		t.Fatalf("the host got data\n %s\nwant\n %s", p["data"], want)
	}
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
func TestFidelity_ServerErrorsAreTheServersOwn(t *testing.T) {
	e := newEnv(t)
	cfg := e.config(e.fake("db", serverErrorScript), allowAll, "[[rule]]\nserver = \"db\"\nprompt = \"*\"\naction = \"allow\"\n")
	errorOf := func(line string) string {
		var m map[string]json.RawMessage
		json.Unmarshal([]byte(line), &m)
		return string(m["error"])
	}
	method := func(params string) string {
		if strings.Contains(params, "db__p\"") {
			return "prompts/get"
		}
		return "tools/call"
	}
	check := func(t *testing.T, ask func(id, body string) string) {
		for i, c := range serverErrorWant {
			id := itoa(int64(i + 1))
			got := errorOf(ask(id, `{"jsonrpc":"2.0","id":`+id+`,"method":"`+method(c.params)+`","params":`+c.params+`}`))
			if got != c.want {
				t.Errorf("%s: the host got the error\n %s\nwant the server's\n %s", c.what, got, c.want)
			}
		}
		got := errorOf(ask("99", `{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{"name":"db__url","arguments":{}}}`))
		if !strings.HasPrefix(got, `{"code":-32603,"message":"mcp-guard: db__url: its server answered with error -32042`) {
			t.Errorf("a -32042 from the server reached the host as %s", got)
		}
	}
	t.Run("stdio", func(t *testing.T) {
		r := e.rawConnect(cfg)
		check(t, func(id, body string) string { r.send(body); return r.waitID(id).line })
	})
	t.Run("http", func(t *testing.T) {
		h := e.rawHTTPConnect(cfg)
		check(t, func(id, body string) string { _, msgs := h.post(body); return responseTo(t, msgs, id).line })
	})
}
