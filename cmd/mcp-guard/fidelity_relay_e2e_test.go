package main

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"
)

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

func TestFidelity_RelayedParamsAndAnswersAreTheSendersOwn(t *testing.T) {
	e := newEnv(t)
	cfg := e.config(e.fake("db", relayScript(t), "allow_sampling = true", "allow_elicitation = true"), allowAll)
	endpoint, _ := e.httpServe(cfg, "--http", "127.0.0.1:0")
	for _, host := range []struct {
		name    string
		connect func(t *testing.T) *rawConn
	}{
		{"stdio", func(t *testing.T) *rawConn { return stdioRawConn(t, e.serveCmd(cfg), &lockedBuffer{}) }},
		{"http", func(t *testing.T) *rawConn { return streamableRawConn(t, endpoint) }},
	} {
		t.Run(host.name, func(t *testing.T) {
			c := host.connect(t)
			c.exchange(`"init"`, `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"sampling":{},"elicitation":{}},"clientInfo":{"name":"raw","version":"1"}}}`)
			c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			if c.listen != nil {
				c.listen() // where mcp-go sends what no request's stream carries
			}

			// Over HTTP mcp-go sends a log message to whichever of the
			// session's streams is open then, or to none: not compared there.
			if host.name == "stdio" {
				c.send(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"db__noisy","arguments":{}}}`)
				var got []string
				for range relayLogLines { // they may come before or after the answer
					p, _ := paramsOf(c.waitFor("notifications/message"), "notifications/message")
					got = append(got, p)
				}
				var want []string
				for _, l := range relayLogLines {
					want = append(want, l.want)
				}
				slices.Sort(got)
				slices.Sort(want)
				for i := range want {
					if got[i] != want[i] {
						t.Errorf("log messages: the host got params\n %s\nwant\n %s", strings.Join(got, "\n "), strings.Join(want, "\n "))
						break
					}
				}
			}

			for _, r := range []struct{ tool, method, params, answer, member string }{
				{"sample", "sampling/createMessage", relaySampling, relaySamplingAnswer, `"result"`},
				{"ask", "elicitation/create", relayElicitation, relayElicitationAnswer, `"result"`},
				// a host may spell the member name with a JSON escape
				{"ask", "elicitation/create", relayElicitation, relayElicitationAnswer, `"r\u0065sult"`},
			} {
				c.send(`{"jsonrpc":"2.0","id":"` + r.tool + `","method":"tools/call","params":{"name":"db__` + r.tool + `","arguments":{}}}`)
				req := c.waitFor(r.method)
				if p, _ := paramsOf(req, r.method); p != r.params {
					t.Errorf("%s: the host got params\n %s\nwant the server's\n %s", r.method, p, r.params)
				}
				var m struct{ ID json.RawMessage }
				json.Unmarshal([]byte(req), &m)
				msgs := c.exchange(`"`+r.tool+`"`, `{"jsonrpc":"2.0","id":`+string(m.ID)+`,`+r.member+`:`+r.answer+`}`)
				// the fake server answers with the response line it received
				var res struct {
					Result struct {
						Content []struct{ Text string }
					}
				}
				json.Unmarshal([]byte(msgs[len(msgs)-1]), &res)
				if len(res.Result.Content) != 1 || !strings.HasSuffix(res.Result.Content[0].Text, `"result":`+r.answer+`}`) {
					t.Errorf("%s: the server got the host's answer as\n %+v\nwant the host's own\n %s", r.method, res.Result.Content, r.answer)
				}
			}
		})
	}
}

// paramsOf is the params of msg when it is a message of method.
func paramsOf(msg, method string) (string, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal([]byte(msg), &m) != nil || string(m["method"]) != `"`+method+`"` {
		return "", false
	}
	return string(m["params"]), true
}

// waitFor reads messages until one of method arrives, and returns it.
func (c *rawConn) waitFor(method string) string {
	c.t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case m, ok := <-c.in:
			if !ok {
				c.t.Fatalf("the connection ended before %s", method)
			}
			if _, ok := paramsOf(m, method); ok {
				return m
			}
		case <-timeout:
			c.t.Fatalf("no %s in 30s", method)
		}
	}
}
