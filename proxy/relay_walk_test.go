package proxy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcp-guard/mcp-guard/config"
	"github.com/mcp-guard/mcp-guard/gate"
)

// relayAccess lets db ask the host for sampling and elicitation.
var relayAccess = gate.ClientAccess{Sampling: config.AccessAllow, Elicitation: config.AccessAllow}

// What mcp-guard relays between a server and a host that neither a list
// nor a result is: a server's log messages, its sampling and elicitation
// requests, and the host's answers to those, each as its sender wrote it
// (member order, members mcp-go does not know, escapes), only the logger
// named after the server and text that needs escaping escaped in place.

// relayLogLines are log messages the server sends, each with the params
// the host must get.
var relayLogLines = []struct{ sent, want string }{
	{`{"data":{"z":1,"a":"<b> & c"},"logger":"lg","level":"warning"}`, `{"data":{"z":1,"a":"<b> & c"},"logger":"db/lg","level":"warning"}`},
	{`{"level":"info","data":"x \u00e9"}`, `{"level":"info","data":"x \u00e9","logger":"db"}`},
	{`{"data":"a\u001bb","level":"error"}`, `{"data":"a\\u{001B}b","level":"error","logger":"db"}`},
}

const (
	relaySampling    = `{"maxTokens":10,"messages":[{"role":"user","content":{"type":"text","text":"hi <there> & \u00e9"}}],"x-vendor":{"z":1,"a":2},"systemPrompt":"s"}`
	relayElicitation = `{"message":"who <are> you","requestedSchema":{"type":"object","properties":{"zname":{"type":"string"},"age":{"type":"number"}}},"x-vendor":1}`
	// the host's answers, members out of mcp-go's order, one it does not know
	relaySamplingAnswer    = `{"role":"assistant","model":"m <1>","content":{"type":"text","text":"ok <b>"},"stopReason":"endTurn","x-host":{"z":1,"a":2}}`
	relayElicitationAnswer = `{"content":{"zname":"a <b>","age":3},"action":"accept","x-host":true}`
)

// relayScript is the fake server that sends those: log messages (noisy),
// a sampling request (sample) and an elicitation (ask), each call's
// result the answer it got, as its text.
func relayScript(t *testing.T) string {
	t.Helper()
	var lines []string
	for _, l := range relayLogLines {
		lines = append(lines, `{"jsonrpc":"2.0","method":"notifications/message","params":`+l.sent+`}`)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // the server's params as written here
	err := enc.Encode(map[string]any{
		"tools": []any{
			map[string]any{"name": "noisy", "inputSchema": map[string]any{"type": "object"}},
			map[string]any{"name": "sample", "inputSchema": map[string]any{"type": "object"}},
			map[string]any{"name": "ask", "inputSchema": map[string]any{"type": "object"}},
		},
		"calls": map[string]any{
			"noisy":  map[string]any{"do": "notify", "lines": lines},
			"sample": map[string]any{"do": "serverRequest", "method": "sampling/createMessage", "params": json.RawMessage(relaySampling)},
			"ask":    map[string]any{"do": "serverRequest", "method": "elicitation/create", "params": json.RawMessage(relayElicitation)},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// relayCases are the requests a host is relayed and answers: the answer
// member spelled plainly, and with a JSON escape.
var relayCases = []struct{ tool, method, params, answer, member string }{
	{"sample", "sampling/createMessage", relaySampling, relaySamplingAnswer, `"result"`},
	{"ask", "elicitation/create", relayElicitation, relayElicitationAnswer, `"result"`},
	{"ask", "elicitation/create", relayElicitation, relayElicitationAnswer, `"r\u0065sult"`},
}

// methodParams is the params of msg when it is a message of method.
func methodParams(msg, method string) (string, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal([]byte(msg), &m) != nil || string(m["method"]) != `"`+method+`"` {
		return "", false
	}
	return string(m["params"]), true
}

// relayedAnswer checks that the server got the host's answer as the host
// wrote it: the fake server's result text ends with the response line it
// received.
func relayedAnswer(t *testing.T, method, answerLine, want string) {
	t.Helper()
	var res struct {
		Result struct {
			Content []struct{ Text string }
		}
	}
	json.Unmarshal([]byte(answerLine), &res)
	if len(res.Result.Content) != 1 || !strings.HasSuffix(res.Result.Content[0].Text, `"result":`+want+`}`) {
		t.Errorf("%s: the server got the host's answer as\n %+v\nwant the host's own\n %s", method, res.Result.Content, want)
	}
}

// The stdio host gets each log message's, sampling request's and
// elicitation's params as the server wrote them, and the server gets the
// host's answers as the host wrote them.
func TestWalk_RelayedParamsAndAnswersAreTheSendersOwnStdio(t *testing.T) {
	walk(t, func(t *testing.T) {
		p := newMemProxyGate(t, dbMayAsk(t, relayAccess), nil, [2]string{"db", relayScript(t)})
		h := startMemHostCaps(t, p.Proxy, `{"sampling":{},"elicitation":{}}`)
		h.request("noisy", "tools/call", `{"name":"db__noisy","arguments":{}}`)
		var got, want []string
		for _, l := range relayLogLines {
			want = append(want, l.want)
		}
		eventually(t, "the log messages", func() bool { return len(h.notifications("notifications/message")) == len(want) })
		for _, n := range h.notifications("notifications/message") {
			ps, _ := methodParams(n, "notifications/message")
			got = append(got, ps)
		}
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("log messages: the host got params\n %s\nwant\n %s", strings.Join(got, "\n "), strings.Join(want, "\n "))
		}
		asked := map[string]bool{}
		for i, r := range relayCases {
			id := r.tool + string(rune('0'+i))
			h.send(`{"jsonrpc":"2.0","id":"` + id + `","method":"tools/call","params":{"name":"db__` + r.tool + `","arguments":{}}}`)
			req := h.first(r.method+" for "+id, func(m rpcMsg) bool { return m.Method == r.method && !asked[string(m.ID)] })
			asked[string(req.ID)] = true
			if ps, _ := methodParams(req.line, r.method); ps != r.params {
				t.Errorf("%s: the host got params\n %s\nwant the server's\n %s", r.method, ps, r.params)
			}
			h.send(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,` + r.member + `:` + r.answer + `}`)
			relayedAnswer(t, r.method, h.answerLine(id), r.answer)
		}
	})
}

// The same over streamable HTTP: sampling comes on the session's GET
// stream, an elicitation on the call's own, and the host answers each in a
// POST of its own.
func TestWalk_RelayedParamsAndAnswersAreTheSendersOwnHTTP(t *testing.T) {
	walk(t, func(t *testing.T) {
		p := newMemProxyGate(t, dbMayAsk(t, relayAccess), nil, [2]string{"db", relayScript(t)})
		h := startHTTPHost(t, p.Proxy).session(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"sampling":{},"elicitation":{}},"clientInfo":{"name":"raw","version":"1"}}}`)
		msgs := make(chan rpcMsg, 64)
		stream := func(resp *http.Response) {
			defer resp.Body.Close()
			if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
				for _, m := range readMessages(resp) {
					msgs <- m
				}
				return
			}
			sc := bufio.NewScanner(resp.Body)
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				var m rpcMsg
				if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok && json.Unmarshal([]byte(d), &m) == nil {
					m.line = d
					msgs <- m
				}
			}
		}
		go stream(h.do(http.MethodGet, "", nil)) // an event stream
		next := func(what string, is func(rpcMsg) bool) rpcMsg {
			t.Helper()
			for {
				select {
				case m := <-msgs:
					if is(m) {
						return m
					}
				case <-time.After(20 * time.Second):
					t.Fatalf("no %s reached the host", what)
				}
			}
		}
		for i, r := range relayCases {
			id := `"` + r.tool + string(rune('0'+i)) + `"`
			go func() {
				// its headers come when it has something to say: the
				// answer, or first the elicitation on its stream
				resp, err := h.send(http.MethodPost, `{"jsonrpc":"2.0","id":`+id+`,"method":"tools/call","params":{"name":"db__`+r.tool+`","arguments":{}}}`, nil)
				if err == nil {
					stream(resp)
				}
			}()
			req := next(r.method, func(m rpcMsg) bool { return m.Method == r.method })
			if ps, _ := methodParams(req.line, r.method); ps != r.params {
				t.Errorf("%s: the host got params\n %s\nwant the server's\n %s", r.method, ps, r.params)
			}
			if code, _ := h.post(`{"jsonrpc":"2.0","id":` + string(req.ID) + `,` + r.member + `:` + r.answer + `}`); code != http.StatusAccepted {
				t.Fatalf("%s: the host's answer: HTTP %d", r.method, code)
			}
			answer := next("the answer to "+id, func(m rpcMsg) bool { return m.Method == "" && string(m.ID) == id })
			relayedAnswer(t, r.method, answer.line, r.answer)
		}
	})
}
