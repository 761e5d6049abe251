package proxy

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/mcp-guard/mcp-guard/classify"
	"github.com/mcp-guard/mcp-guard/ledger"
)

// modernMeta is the _meta of a 2026-07-28 request of the test host.
const modernMeta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`

// mcp-guard answers the four lists itself, in one page: a 2026-07-28
// request gets that revision's envelope around the same items, and a
// request that brings a cursor (mcp-guard gives none) or no JSON-RPC 2.0
// is refused, on stdio and over HTTP, in a session and without one.
func TestWalk_ListsAreOnePageMcpGuardAnswers(t *testing.T) {
	const envelope = `{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"mcp-guard","version":"test"}},"resultType":"complete","ttlMs":0,"cacheScope":"private",`
	lists := map[string]string{"tools/list": "tools", "prompts/list": "prompts", "resources/list": "resources", "resources/templates/list": "resourceTemplates"}
	walk(t, func(t *testing.T) {
		p := newMemProxyRules(t, tomlRules(t, fidelityRules, "db", "aa"), [2]string{"db", fidelityDB}, [2]string{"aa", fidelityAA})
		h := startMemHost(t, p.Proxy)
		hh := startHTTPHost(t, p.Proxy)
		sess := hh.session(initBody)
		for method, items := range lists {
			r := h.request("l"+method, method, `{}`)
			legacy := memberOf(h.answerLine("l"+method), "result")
			if r.Error != nil || !strings.HasPrefix(legacy, `{"`+items+`":[{`) {
				t.Fatalf("stdio %s: %s", method, h.answerLine("l"+method))
			}
			if got := string(h.request("m"+method, method, `{`+modernMeta+`}`).Result); got != envelope+legacy[1:] {
				t.Errorf("stdio %s at 2026-07-28:\n got  %s\n want %s", method, got, envelope+legacy[1:])
			}
			code, body := hh.postModern(method, `{"jsonrpc":"2.0","id":7,"method":"`+method+`","params":{`+modernMeta+`}}`)
			if got := memberOf(body, "result"); code != http.StatusOK || got != envelope+legacy[1:] {
				t.Errorf("HTTP %s at 2026-07-28: %d\n got  %s\n want %s", method, code, got, envelope+legacy[1:])
			}
			_, msgs := sess.post(`{"jsonrpc":"2.0","id":8,"method":"` + method + `","params":{}}`)
			if got := memberOf(responseTo(t, msgs, "8").line, "result"); got != legacy {
				t.Errorf("HTTP session %s:\n got  %s\n want %s", method, got, legacy)
			}

			if r := h.request("c"+method, method, `{"cursor":"eA=="}`); r.Error == nil || r.Error.Code != -32602 || !strings.Contains(r.Error.Message, "cursor") {
				t.Errorf("stdio %s with a cursor: %s", method, h.answerLine("c"+method))
			}
			code, body = hh.postModern(method, `{"jsonrpc":"2.0","id":9,"method":"`+method+`","params":{"cursor":"eA==",`+modernMeta+`}}`)
			if code != http.StatusBadRequest || !strings.Contains(body, `"code":-32602`) {
				t.Errorf("HTTP %s at 2026-07-28 with a cursor: %d %s", method, code, body)
			}
			if r := h.request("e"+method, method, `{"cursor":""}`); r.Error != nil {
				t.Errorf("stdio %s with an empty cursor (none): %s", method, h.answerLine("e"+method))
			}
		}
		h.send(`{"jsonrpc":"1.0","id":"v","method":"tools/list"}`)
		if got := h.answerLine("v"); !strings.Contains(got, `"code":-32600`) || !strings.Contains(got, `\"jsonrpc\" must be \"2.0\"`) {
			t.Errorf("a list not of JSON-RPC 2.0: %s", got)
		}
		if r := h.request("u", "tools/list", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}}}`); r.Error == nil || r.Error.Code != -32022 {
			t.Errorf("a list of a protocol mcp-guard does not speak: %s", h.answerLine("u"))
		}
		if r := h.request("n", "tools/list", `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}`); r.Error == nil || r.Error.Code != -32602 {
			t.Errorf("a 2026-07-28 list without the client's capabilities: %s", h.answerLine("n"))
		}
	})
}

// mcp-guard answers resources/read itself: a URI no listed resource is
// read through the first listed template of its server that produces it
// (that template's pin stands for the read), and a 2026-07-28 host gets
// the server's own bytes, URIs mapped, in that revision's envelope with
// no caching; a URI nothing exposed produces is refused and recorded, and
// params that do not read are refused, neither forwarded.
func TestWalk_ResourceReadIsMcpGuards(t *testing.T) {
	walk(t, func(t *testing.T) {
		p := newMemProxy(t, []classify.Rule{{Server: "notes", Resource: "file:///**", Action: classify.Allow}},
			[2]string{"notes", `{"tools":[],"resourceTemplates":[{"uriTemplate":"file:///{x}","name":"one"},{"uriTemplate":"file:///{+path}","name":"two"}]}`})
		h := startMemHost(t, p.Proxy)
		r := h.request("1", "resources/read", `{"uri":"mcp-guard://notes/file:///t.txt",`+modernMeta+`}`)
		const want = `{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"mcp-guard","version":"test"}},"resultType":"complete","ttlMs":0,"cacheScope":"private","contents":[{"uri":"mcp-guard://notes/file:///t.txt","mimeType":"text/plain","text":"read file:///t.txt"}]}`
		if string(r.Result) != want {
			t.Fatalf("a 2026-07-28 host's read:\n got  %s\n want %s", r.Result, want)
		}
		one, err := p.led.Pin(context.Background(), "notes", "template:file:///{x}")
		if err != nil {
			t.Fatal(err)
		}
		if row := p.rowsOf(t, "file:///t.txt"); len(row) != 1 || row[0].Decision != "allow" || row[0].PinDigest != one.Digest {
			t.Fatalf("the read's row: %+v; want it under the first template's pin %s", row, one.Digest)
		}
		if r := h.request("2", "resources/read", `{"uri":"mcp-guard://notes/other:x"}`); r.Error == nil || r.Error.Code != -32002 || !strings.Contains(r.Error.Message, "not found") {
			t.Fatalf("a read of a URI nothing exposed produces: %+v", r.Error)
		}
		if r := h.request("3", "resources/read", `{"uri":5}`); r.Error == nil || r.Error.Code != -32602 || r.Error.Message != `invalid resources/read params: "uri" is a JSON number, not a string` {
			t.Fatalf("a read whose uri is a number: %+v", r.Error)
		}
		if reads := p.received(t, "notes", "resources/read"); len(reads) != 1 {
			t.Fatalf("upstream received %v", reads)
		}
		var unknown []ledger.CallRow
		for _, r := range p.calls(t) {
			if r.Decision == "unknown_resource" {
				unknown = append(unknown, r)
			}
		}
		if len(unknown) != 1 || unknown[0].Exposed != "mcp-guard://notes/other:x" {
			t.Fatalf("the refused read's row: %+v", unknown)
		}
	})
}

// mcp-guard answers completion/complete itself: a 2026-07-28 host gets the
// server's own result (its hasMore and _meta too) in mcp-guard's envelope;
// a template's completion goes to its server under the server's own URI;
// a prompt the host is not shown, or a reference of no known type, gets
// none, and nothing is forwarded for either.
func TestWalk_CompletionIsMcpGuards(t *testing.T) {
	walk(t, func(t *testing.T) {
		p := newMemProxyRules(t, tomlRules(t, fidelityRules, "db", "aa"), [2]string{"db", fidelityDB}, [2]string{"aa", fidelityAA})
		h := startMemHost(t, p.Proxy)
		r := h.request("1", "completion/complete", `{"ref":{"type":"ref/prompt","name":"db__pz"},"argument":{"name":"q","value":""},`+modernMeta+`}`)
		const want = `{"resultType":"complete","completion":{"values":["b","a"],"hasMore":false,"total":2},"_meta":{"z":1,"a":2,"io.modelcontextprotocol/serverInfo":{"name":"mcp-guard","version":"test"}}}`
		if string(r.Result) != want {
			t.Fatalf("a 2026-07-28 host's completion:\n got  %s\n want %s", r.Result, want)
		}
		if r := h.request("2", "completion/complete", `{"ref":{"type":"ref/resource","uri":"mcp-guard://db/file:///t/{x}"},"argument":{"name":"x","value":"a"}}`); r.Error != nil {
			t.Fatalf("a template's completion: %+v", r.Error)
		}
		if r := h.request("3", "completion/complete", `{"ref":{"type":"ref/prompt","name":"db__hidden"},"argument":{"name":"q","value":""}}`); r.Error == nil || !strings.Contains(r.Error.Message, `no prompt "db__hidden" is exposed`) {
			t.Fatalf("a completion of a prompt not shown: %+v", r.Error)
		}
		if r := h.request("4", "completion/complete", `{"ref":{"type":"ref/tool","name":"db__zeta"},"argument":{"name":"q","value":""}}`); r.Error == nil || r.Error.Code != -32602 {
			t.Fatalf("a completion of an unknown reference type: %+v", r.Error)
		}
		got := p.received(t, "db", "completion/complete")
		if len(got) != 2 || !strings.Contains(got[0], `"ref":{"type":"ref/prompt","name":"pz"}`) || !strings.Contains(got[1], `"ref":{"type":"ref/resource","uri":"file:///t/{x}"}`) {
			t.Fatalf("the server got %v", got)
		}
	})
}

// mcp-guard answers ping and logging/setLevel itself: a ping gets {}, and
// a level the host sets reaches every upstream that logs; a level MCP has
// no name for is refused and reaches none; a 2026-07-28 request of either
// is refused as of a method that revision removed.
func TestWalk_PingAndSetLevelAreMcpGuards(t *testing.T) {
	walk(t, func(t *testing.T) {
		p := newMemProxy(t, allowAll, [2]string{"db", `{"tools":[{"name":"x","inputSchema":{"type":"object"}}],"capabilities":{"tools":{},"logging":{}}}`})
		h := startMemHost(t, p.Proxy)
		if r := h.request("1", "ping", `{}`); r.Error != nil || string(r.Result) != `{}` {
			t.Fatalf("ping: %s", h.answerLine("1"))
		}
		if r := h.request("2", "logging/setLevel", `{"level":"error"}`); r.Error != nil || string(r.Result) != `{}` {
			t.Fatalf("logging/setLevel: %s", h.answerLine("2"))
		}
		eventually(t, "the level to reach the upstream", func() bool { return len(p.received(t, "db", "logging/setLevel")) == 1 })
		if got := p.received(t, "db", "logging/setLevel")[0]; !strings.Contains(got, `"params":{"level":"error"}`) {
			t.Fatalf("the upstream got %s", got)
		}
		if r := h.request("3", "logging/setLevel", `{"level":"loud"}`); r.Error == nil || r.Error.Code != -32602 {
			t.Fatalf("a level of no name: %s", h.answerLine("3"))
		}
		for i, m := range []string{"ping", "logging/setLevel"} {
			id := "m" + itoa(i)
			if r := h.request(id, m, `{"level":"info",`+modernMeta+`}`); r.Error == nil || r.Error.Code != -32601 || !strings.Contains(r.Error.Message, "removed in protocol version 2026-07-28") {
				t.Fatalf("a 2026-07-28 %s: %s", m, h.answerLine(id))
			}
		}
		if n := len(p.received(t, "db", "logging/setLevel")); n != 1 {
			t.Fatalf("the upstream got %d levels, want the one", n)
		}
	})
}

// mcp-guard answers initialize and server/discover itself: a 2025 host gets
// the revision it asked for if mcp-guard speaks it, else the latest before
// 2026-07-28, and what mcp-guard offers (its capabilities are kept for the
// session: TestWalk_HostApprovalAnswerIsUsedOnce); a
// 2026-07-28 host discovers the revisions and the same offer in that
// revision's envelope. Each revision's method is refused in the other.
func TestWalk_InitializeAndDiscoverAreMcpGuards(t *testing.T) {
	const caps = `"capabilities":{"logging":{},"prompts":{"listChanged":true},"resources":{"subscribe":true,"listChanged":true},"tools":{"listChanged":true},"completions":{}}`
	walk(t, func(t *testing.T) {
		p := newMemProxy(t, allowAll, [2]string{"db", `{"tools":[{"name":"x","inputSchema":{"type":"object"}}],"instructions":"db <says> hi"}`})
		h := startMemHostCaps(t, p.Proxy, `{"elicitation":{}}`)
		if want := `{"protocolVersion":"2025-11-25",` + caps + `,"serverInfo":{"name":"mcp-guard","version":"test"},"instructions":`; !strings.HasPrefix(string(h.init.Result), want) ||
			!strings.Contains(string(h.init.Result), "db <says> hi") {
			t.Fatalf("initialize:\n got  %s\n want %s…", h.init.Result, want)
		}
		for v, want := range map[string]string{"2025-06-18": "2025-06-18", "2099-01-01": "2025-11-25", "2026-07-28": "2025-11-25"} {
			r := h.request("v"+v, "initialize", `{"protocolVersion":"`+v+`","capabilities":{},"clientInfo":{"name":"t","version":"1"}}`)
			if got := memberOf(string(r.Result), "protocolVersion"); got != `"`+want+`"` {
				t.Errorf("initialize asking for %s got %s, want %s", v, got, want)
			}
		}
		r := h.request("d", "server/discover", `{`+modernMeta+`}`)
		if want := `{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"mcp-guard","version":"test"}},"resultType":"complete","ttlMs":0,"cacheScope":"private","supportedVersions":["2026-07-28","2025-11-25","2025-06-18","2025-03-26","2024-11-05"],` + caps + `,"instructions":`; !strings.HasPrefix(string(r.Result), want) {
			t.Fatalf("server/discover:\n got  %s\n want %s…", r.Result, want)
		}
		if r := h.request("d2", "server/discover", `{}`); r.Error == nil || r.Error.Code != -32601 {
			t.Fatalf("a 2025 server/discover: %s", h.answerLine("d2"))
		}
		if r := h.request("i", "initialize", `{`+modernMeta+`}`); r.Error == nil || r.Error.Code != -32601 {
			t.Fatalf("a 2026-07-28 initialize: %s", h.answerLine("i"))
		}
		if r := h.request("b", "initialize", `[]`); r.Error == nil || r.Error.Code != -32602 {
			t.Fatalf("an initialize whose params are no object: %s", h.answerLine("b"))
		}
	})
}

// mcp-guard answers resources/subscribe and unsubscribe itself: an exposed
// resource is subscribed upstream and unsubscribed again, from the stdio
// host and from an HTTP session; a request with
// no URI is refused; a 2026-07-28 request of either is refused as of a
// method that revision removed, and subscribes nothing upstream.
func TestWalk_SubscribeIsMcpGuards(t *testing.T) {
	walk(t, func(t *testing.T) {
		p := newMemProxy(t, []classify.Rule{{Server: "db", Resource: "file:///**", Action: classify.Allow}},
			[2]string{"db", `{"tools":[],"resources":[{"uri":"file:///a.txt","name":"a"}]}`})
		h := startMemHost(t, p.Proxy)
		const uri = `{"uri":"mcp-guard://db/file:///a.txt"`
		if r := h.request("m", "resources/subscribe", uri+`,`+modernMeta+`}`); r.Error == nil || r.Error.Code != -32601 {
			t.Fatalf("a 2026-07-28 resources/subscribe: %s", h.answerLine("m"))
		}
		if r := h.request("n", "resources/subscribe", `{}`); r.Error == nil || r.Error.Code != -32602 {
			t.Fatalf("a resources/subscribe with no URI: %s", h.answerLine("n"))
		}
		if n := len(p.received(t, "db", "resources/subscribe")); n != 0 {
			t.Fatalf("refused subscriptions reached the upstream (%d)", n)
		}
		if r := h.request("s", "resources/subscribe", uri+`}`); r.Error != nil || string(r.Result) != `{}` {
			t.Fatalf("resources/subscribe: %s", h.answerLine("s"))
		}
		if r := h.request("u", "resources/unsubscribe", uri+`}`); r.Error != nil || string(r.Result) != `{}` {
			t.Fatalf("resources/unsubscribe: %s", h.answerLine("u"))
		}
		if s, u := p.received(t, "db", "resources/subscribe"), p.received(t, "db", "resources/unsubscribe"); len(s) != 1 || len(u) != 1 ||
			!strings.Contains(s[0], `"uri":"file:///a.txt"`) || !strings.Contains(u[0], `"uri":"file:///a.txt"`) {
			t.Fatalf("the upstream got subscribe %v, unsubscribe %v", s, u)
		}
		hh := startHTTPHost(t, p.Proxy).session(initBody)
		if _, msgs := hh.post(`{"jsonrpc":"2.0","id":9,"method":"resources/subscribe","params":` + uri + `}}`); memberOf(responseTo(t, msgs, "9").line, "result") != `{}` {
			t.Fatalf("an HTTP session's resources/subscribe: %+v", msgs)
		}
		if s := p.received(t, "db", "resources/subscribe"); len(s) != 2 {
			t.Fatalf("the HTTP session's subscription did not reach the upstream: %v", s)
		}
	})
}

// Every message no method handler takes gets its answer from mcp-guard: a
// method it does not offer (tasks among them) -32601; a request whose id
// is neither a string nor a number -32600 under id null; a notification
// and an answer to no request nothing. A request whose handler panics is
// answered -32603 and the session goes on.
func TestWalk_OtherMessagesAnswered(t *testing.T) {
	walk(t, func(t *testing.T) {
		p := newMemProxy(t, allowAll, [2]string{"db", `{"tools":[{"name":"x","inputSchema":{"type":"object"}}]}`})
		h := startMemHost(t, p.Proxy)
		for i, m := range []string{"tasks/list", "tasks/get", "nope/nope"} {
			id := "u" + itoa(i)
			if r := h.request(id, m, `{}`); r.Error == nil || r.Error.Code != -32601 || !strings.Contains(r.Error.Message, m) {
				t.Fatalf("%s: %s", m, h.answerLine(id))
			}
		}
		h.send(`{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`)
		h.send(`{"jsonrpc":"2.0","id":"nobody","result":{}}`)
		h.send(`{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}`)
		eventually(t, "the invalid request's answer", func() bool {
			h.mu.Lock()
			defer h.mu.Unlock()
			r, ok := h.got["null"]
			return ok && r.Error != nil && r.Error.Code == -32600
		})
		p.mu.Lock()
		v := p.view
		p.view = nil // no view: the list handler panics
		p.mu.Unlock()
		if r := h.request("p", "tools/list", `{}`); r.Error == nil || r.Error.Code != -32603 {
			t.Fatalf("a handler's panic: %s", h.answerLine("p"))
		}
		p.mu.Lock()
		p.view = v
		p.mu.Unlock()
		if r := h.request("q", "tools/list", `{}`); r.Error != nil {
			t.Fatalf("the session after a handler's panic: %s", h.answerLine("q"))
		}
		h.end()
		for _, l := range h.lines {
			var m rpcMsg
			if json.Unmarshal([]byte(l), &m) == nil && m.Method == "" && string(m.ID) == `"nobody"` {
				t.Fatalf("an answer to no request was answered: %s", l)
			}
		}
	})
}
