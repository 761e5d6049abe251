package proxy

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcp-guard/mcp-guard/classify"
)

// The walks of a host's cancellation (cancel.go), and of the requests the
// host transports refuse before anything is served (batch.go, httppost.go).

const slowScript = `{"tools":[{"name":"slow","inputSchema":{"type":"object"}}],"calls":{"slow":{"do":"sleep","ms":60000}}}`

// upstreamCancel is the last notifications/cancelled upstream name
// received, and the id of the tools/call it received.
func (m *memProxy) upstreamCancel(t *testing.T, name string) (cancel map[string]json.RawMessage, callID string) {
	t.Helper()
	for _, l := range m.received(t, name, "notifications/cancelled") {
		var n struct {
			Params map[string]json.RawMessage `json:"params"`
		}
		if json.Unmarshal([]byte(l), &n) == nil {
			cancel = n.Params
		}
	}
	if calls := m.received(t, name, "tools/call"); len(calls) == 1 {
		callID = idOf(t, calls[0])
	}
	return cancel, callID
}

// A host's cancellation is carried out and not answered: over stdio, on
// the fast path (a plain call) and by the handler (a call with other
// _meta), the upstream is told with the host's own reason (none when the
// host gave none), the ledger records the call cancelled, and nothing
// answering the request reaches the host before its stream ends.
func TestWalk_CancelledStdioRequestIsNotAnswered(t *testing.T) {
	for _, c := range []struct {
		name, params, cancel, reason string
	}{
		{"fast path", `{"name":"db__slow","arguments":{}}`, `{"requestId":"c1","reason":"the user pressed stop"}`, `"the user pressed stop"`},
		{"handler", `{"name":"db__slow","arguments":{},"_meta":{"x-trace":"1"}}`, `{"requestId":"c1"}`, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			walk(t, func(t *testing.T) {
				p := newMemProxy(t, allowAll, [2]string{"db", slowScript})
				h := startMemHost(t, p.Proxy)
				h.send(`{"jsonrpc":"2.0","id":"c1","method":"tools/call","params":` + c.params + `}`)
				eventually(t, "the call to reach the upstream", func() bool { return len(p.received(t, "db", "tools/call")) == 1 })
				h.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":` + c.cancel + `}`)
				var cancel map[string]json.RawMessage
				var callID string
				eventually(t, "the upstream to be told", func() bool { cancel, callID = p.upstreamCancel(t, "db"); return cancel != nil })
				if string(cancel["requestId"]) != callID || string(cancel["reason"]) != c.reason {
					t.Fatalf("upstream got cancelled %v for call %s; want the call's id and reason %s", cancel, callID, c.reason)
				}
				eventually(t, "the call recorded cancelled", func() bool { return p.call(t, "slow").State == "cancelled" })
				h.end() // serve answers what it owes, then ends
				for _, l := range h.lines {
					var m rpcMsg
					if json.Unmarshal([]byte(l), &m) == nil && string(m.ID) == `"c1"` {
						t.Fatalf("the cancelled request was answered: %s", l)
					}
				}
			})
		})
	}
}

// Over HTTP the same: the cancelled request's POST ends without an answer,
// on the fast path and by the handler, and when the host spells the method
// with JSON escapes.
func TestWalk_CancelledHTTPRequestIsNotAnswered(t *testing.T) {
	const plain = `{"name":"db__slow","arguments":{}}`
	for _, c := range []struct{ name, params, method string }{
		{"fast path", plain, `"notifications/cancelled"`},
		{"escaped", plain, `"notifications\/cancel\u006ced"`},
		{"handler", `{"name":"db__slow","arguments":{},"_meta":{"x-trace":"1"}}`, `"notifications/cancelled"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			walk(t, func(t *testing.T) {
				p := newMemProxy(t, allowAll, [2]string{"db", slowScript})
				h := startHTTPHost(t, p.Proxy).session(initBody)
				type answer struct {
					code int
					msgs []rpcMsg
				}
				done := make(chan answer, 1)
				go func() {
					resp, err := h.send(http.MethodPost, `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":`+c.params+`}`, nil)
					if err != nil {
						done <- answer{}
						return
					}
					defer resp.Body.Close()
					done <- answer{resp.StatusCode, readMessages(resp)}
				}()
				eventually(t, "the call to reach the upstream", func() bool { return len(p.received(t, "db", "tools/call")) == 1 })
				if code, _ := h.post(`{"jsonrpc":"2.0","method":` + c.method + `,"params":{"requestId":7,"reason":"stop <now>"}}`); code != http.StatusAccepted {
					t.Fatalf("notifications/cancelled: HTTP %d", code)
				}
				var a answer
				select {
				case a = <-done:
				case <-time.After(20 * time.Second):
					t.Fatal("the cancelled request's POST did not end")
				}
				for _, m := range a.msgs {
					if string(m.ID) == "7" {
						t.Fatalf("the cancelled request was answered (HTTP %d): %s", a.code, m.line)
					}
				}
				var cancel map[string]json.RawMessage
				var callID string
				eventually(t, "the upstream to be told", func() bool { cancel, callID = p.upstreamCancel(t, "db"); return cancel != nil })
				if string(cancel["requestId"]) != callID || string(cancel["reason"]) != `"stop <now>"` {
					t.Fatalf("upstream got cancelled %v for call %s; want the host's reason", cancel, callID)
				}
				eventually(t, "the call recorded cancelled", func() bool { return p.call(t, "slow").State == "cancelled" })
			})
		})
	}
}

// A GET stream needs a session mcp-go started: none gets 400, an unknown
// one 404, and neither registers a host session; the real one opens.
// A batch is refused in words, on both transports.
func TestWalk_HTTPGetNeedsASessionAndBatchesAreRefused(t *testing.T) {
	walk(t, func(t *testing.T) {
		p := newMemProxy(t, allowAll, [2]string{"db", slowScript})
		h := startHTTPHost(t, p.Proxy).session(initBody)
		before := strings.Count(p.log.String(), "host connected")
		for _, c := range []struct {
			what, sid string
			want      int
		}{{"no session id", "", http.StatusBadRequest}, {"an unknown session id", "made-up-session", http.StatusNotFound}} {
			resp := h.do(http.MethodGet, "", map[string]string{"Mcp-Session-Id": c.sid})
			resp.Body.Close()
			if resp.StatusCode != c.want {
				t.Errorf("GET with %s: HTTP %d, want %d", c.what, resp.StatusCode, c.want)
			}
		}
		if after := strings.Count(p.log.String(), "host connected"); after != before {
			t.Fatalf("a refused GET registered a host session (%d connected, was %d)", after, before)
		}
		resp := h.do(http.MethodGet, "", nil)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
			t.Fatalf("GET in the session: HTTP %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
		}

		const batch = `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping"}]`
		code, msgs := h.post(batch)
		if code != http.StatusBadRequest || len(msgs) != 1 || !strings.Contains(msgs[0].line, "batches are not supported") {
			t.Fatalf("HTTP batch: %d %+v", code, msgs)
		}
		r := startMemHost(t, p.Proxy)
		r.send(batch)
		if a := r.request("after", "ping", `{}`); a.Error != nil {
			t.Fatalf("ping after the batch: %+v", a.Error)
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		var refused string
		for _, l := range r.lines {
			if strings.Contains(l, "batches are not supported") {
				refused = l
			}
		}
		if !strings.Contains(refused, `"id":null`) {
			t.Fatalf("stdio batch answered %q; lines %v", refused, r.lines)
		}
	})
}

// A prompts/get mcp-guard serves is cancelled as a call is: the upstream
// is told, the ledger records it cancelled, and the host gets no answer.
func TestWalk_CancelledPromptGetIsNotAnswered(t *testing.T) {
	walk(t, func(t *testing.T) {
		p := newMemProxy(t, []classify.Rule{{Server: "db", Prompt: "*", Action: classify.Allow}},
			[2]string{"db", `{"tools":[],"prompts":[{"name":"slow"}],"stall":{"prompts/get":-1}}`})
		h := startMemHost(t, p.Proxy)
		h.send(`{"jsonrpc":"2.0","id":"g1","method":"prompts/get","params":{"name":"db__slow"}}`)
		eventually(t, "the get to reach the upstream", func() bool { return len(p.received(t, "db", "prompts/get")) == 1 })
		h.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"g1","reason":"enough"}}`)
		eventually(t, "the upstream to be told", func() bool { return len(p.received(t, "db", "notifications/cancelled")) == 1 })
		if n := p.received(t, "db", "notifications/cancelled")[0]; !strings.Contains(n, `"reason":"enough"`) ||
			!strings.Contains(n, `"requestId":`+idOf(t, p.received(t, "db", "prompts/get")[0])) {
			t.Fatalf("the upstream was told %s", n)
		}
		eventually(t, "the get recorded cancelled", func() bool { return p.call(t, "slow").State == "cancelled" })
		h.end()
		for _, l := range h.lines {
			var m rpcMsg
			if json.Unmarshal([]byte(l), &m) == nil && string(m.ID) == `"g1"` {
				t.Fatalf("the cancelled get was answered: %s", l)
			}
		}
	})
}

// A 2026-07-28 host's subscriptions/listen, acknowledged and held open
// until the host ends it, is not answered once the host cancels it.
func TestWalk_CancelledListenIsNotAnswered(t *testing.T) {
	walk(t, func(t *testing.T) {
		p := newMemProxy(t, allowAll, [2]string{"db", `{"tools":[{"name":"x","inputSchema":{"type":"object"}}]}`})
		h := startMemHost(t, p.Proxy)
		h.send(`{"jsonrpc":"2.0","id":"s1","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},` + modernMeta + `}}`)
		h.waitMethod("notifications/subscriptions/acknowledged")
		h.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"s1"}}`)
		h.end()
		for _, l := range h.lines {
			var m rpcMsg
			if json.Unmarshal([]byte(l), &m) == nil && string(m.ID) == `"s1"` {
				t.Fatalf("the cancelled listen was answered: %s", l)
			}
		}
	})
}
