package proxy

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcp-guard/mcp-guard/classify"
	"github.com/mcp-guard/mcp-guard/config"
	"github.com/mcp-guard/mcp-guard/gate"
)

// The HTTP host's fast path (httpfast.go): an ordinary tools/call served
// with one parse, answered as the handler (methods.go) answers it.

// fastScript's tools answer each way a call can be answered: the server's
// own result, its own error object, progress before the result, and an
// elicitation asked of the host during the call.
const fastScript = `{"tools":[
 {"name":"echo","inputSchema":{"type":"object"}},
 {"name":"boom","inputSchema":{"type":"object"}},
 {"name":"typed","inputSchema":{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}},
 {"name":"steps","inputSchema":{"type":"object"}},
 {"name":"ask","inputSchema":{"type":"object"}}],
"calls":{
 "boom":{"do":"error","code":-32602,"message":"bad <arg> \u00e9","data":{"z":1,"a":"x"}},
 "steps":{"do":"progress","count":2,"intervalMs":0},
 "ask":{"do":"serverRequest","method":"elicitation/create","timeoutMs":8000,
  "params":{"message":"your name?","requestedSchema":{"type":"object","properties":{"name":{"type":"string"}}}}}}}`

var ledgerCallRE = regexp.MustCompile(`\(ledger call \d+\)`)

// dbMayAsk is a gate allowing every tool of db, where db may ask a of the
// host.
func dbMayAsk(t *testing.T, a gate.ClientAccess) *gate.Gate {
	return gate.New(mustRules(t, allowAll), gate.WithClientAccess(map[string]gate.ClientAccess{"db": a}))
}

// An HTTP host's ordinary tools/call is served by the fast path, and
// answered byte for byte as the same call served by methods.go's tools/call
// handler is: the server's result, its error object, a refusal by the
// gate, progress then the result as whole events of an event stream. The
// same request with a repeated "jsonrpc" member (which the fast path
// leaves to the handler) is the other side. Both answer under the id as
// the host wrote it. The fast path changes only how fast a call is served
// (scripts/bench), so no mutation entry removes it.
func TestWalk_HTTPFastPathAnswersAsTheHandlerDoes(t *testing.T) {
	walk(t, func(t *testing.T) {
		p := newMemProxy(t, allowAll, [2]string{"db", fastScript})
		h := startHTTPHost(t, p.Proxy).session(initBody)
		for _, c := range []struct{ what, params string }{
			{"the server's result", `{"name":"db__echo","arguments":{"text":"<b>caf\u00e9</b> & more","n":1.50}}`},
			{"the server's error object", `{"name":"db__boom","arguments":{}}`},
			{"a refusal by the pinned schema", `{"name":"db__typed","arguments":{"n":"seven"}}`},
			{"progress, then the result", `{"name":"db__steps","arguments":{},"_meta":{"progressToken":"p1"}}`},
		} {
			fast := h.postRaw(`{"jsonrpc":"2.0","id":7.0,"method":"tools/call","params":` + c.params + `}`)
			slow := h.postRaw(`{"jsonrpc":"2.0","jsonrpc":"2.0","id":7,"method":"tools/call","params":` + c.params + `}`)
			if !strings.Contains(fast.body, `"id":7.0,`) || !strings.Contains(slow.body, `"id":7,`) {
				t.Fatalf("%s: an answer not under the id the host wrote:\nfast %s\nslow %s", c.what, fast.body, slow.body)
			}
			fast.body = strings.Replace(fast.body, `"id":7.0,`, `"id":7,`, 1)
			// A refusal names the call's own ledger row.
			fast.body = ledgerCallRE.ReplaceAllString(fast.body, "(ledger call N)")
			slow.body = ledgerCallRE.ReplaceAllString(slow.body, "(ledger call N)")
			if fast != slow {
				t.Errorf("%s: the fast path answered\n%+v\nthe handler answered\n%+v", c.what, fast, slow)
			}
			if c.what == "progress, then the result" && (fast.contentType != "text/event-stream" || !wholeEvents(fast.body)) {
				t.Errorf("%s: not an event stream of whole events: %s\n%s", c.what, fast.contentType, fast.body)
			}
		}
		if got := len(p.received(t, "db", "tools/call")); got != 6 {
			t.Fatalf("the upstream got %d calls; want 6 (echo, boom and steps twice each; the refused call never)", got)
		}
		if rows := p.calls(t); len(rows) != 8 {
			t.Fatalf("the ledger holds %d calls; want 8 (four twice)", len(rows))
		}
	})
}

// wholeEvents reports whether body is an event stream's text with every
// line an event's field or the blank line that ends one.
func wholeEvents(body string) bool {
	for _, l := range strings.Split(body, "\n") {
		if l != "" && !strings.HasPrefix(l, "event: ") && !strings.HasPrefix(l, "data: ") {
			return false
		}
	}
	return strings.Contains(body, "data: ")
}

// A host that declared elicitation is asked on its call's own stream: the
// question and the answer arrive on the POST the call came on, with no GET
// stream open.
func TestWalk_HTTPFastPathElicitingHostIsAskedOnTheCallsStream(t *testing.T) {
	walk(t, func(t *testing.T) {
		p := newMemProxyGate(t, dbMayAsk(t, gate.ClientAccess{Elicitation: config.AccessAllow}), nil, [2]string{"db", fastScript})
		h := startHTTPHost(t, p.Proxy).session(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"raw","version":"1"}}}`)
		resp := h.do(http.MethodPost, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"db__ask","arguments":{}}}`, nil)
		defer resp.Body.Close()
		if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
			b, _ := io.ReadAll(resp.Body)
			t.Fatalf("the call was answered as %s before the host was asked: %s", ct, b)
		}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		asked := false
		for sc.Scan() {
			d, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var m rpcMsg
			if json.Unmarshal([]byte(d), &m) != nil {
				t.Fatalf("not JSON on the stream: %s", d)
			}
			switch {
			case m.Method == "elicitation/create":
				asked = true
				if code, _ := h.post(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"action":"accept","content":{"name":"Ada"}}}`); code != http.StatusAccepted {
					t.Fatalf("the host's answer: HTTP %d", code)
				}
			case string(m.ID) == "9":
				if !asked || !strings.Contains(d, "Ada") {
					t.Fatalf("the call was answered without the host being asked on its stream (asked %v): %s", asked, d)
				}
				return
			}
		}
		t.Fatalf("the call's stream ended without an answer (asked %v): %v", asked, sc.Err())
	})
}

// A session idle for the idle TTL ends, and every request of it moves its
// clock, the fast path's too: a session in use, all its calls fast,
// outlives the TTL; left idle, it ends.
func TestWalk_HTTPFastPathSessionInUseOutlivesIdleTTL(t *testing.T) {
	walk(t, func(t *testing.T) {
		p := newMemProxy(t, allowAll, [2]string{"db", fastScript})
		h := startHTTPHostWith(t, p.Proxy, HTTPOptions{IdleTTL: 2 * time.Second}).session(initBody)
		call := func(i int) rawAnswer {
			return h.postRaw(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"db__echo","arguments":{"i":` + strconv.Itoa(i) + `}}}`)
		}
		i := 0
		for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(150 * time.Millisecond) {
			i++
			if a := call(i); a.code != http.StatusOK || !strings.Contains(a.body, `"result"`) || strings.Contains(a.body, `"isError":true`) {
				t.Fatalf("call %d in a session in use: HTTP %d %s", i, a.code, a.body)
			}
		}
		time.Sleep(4 * time.Second) // the TTL, and the sweep after it (every TTL/2)
		if a := call(i + 1); a.code != http.StatusNotFound {
			t.Fatalf("a call after the session sat idle past the TTL: HTTP %d %s; want 404", a.code, a.body)
		}
	})
}

// While a call waits for the operator, a host that asked for progress is
// told about once a second, on the call's own stream, what it waits for;
// then it gets the answer on the same stream.
func TestWalk_HTTPFastPathApprovalWaitProgressOnTheCallsStream(t *testing.T) {
	walk(t, func(t *testing.T) {
		ask := []classify.Rule{{Server: "db", Tool: "echo", Class: classify.Write, Action: classify.Ask}}
		p := newMemProxyWith(t, mustRules(t, ask), func(o *Options) { o.Limits.ApprovalWait = 2500 * time.Millisecond }, [2]string{"db", fastScript})
		h := startHTTPHost(t, p.Proxy).session(initBody)
		code, msgs := h.post(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"db__echo","arguments":{},"_meta":{"progressToken":"w"}}}`)
		var waiting int
		for i, m := range msgs {
			switch {
			case m.Method == "notifications/progress" && strings.Contains(string(m.Params), `"progressToken":"w"`) &&
				strings.Contains(string(m.Params), "waiting for the operator to approve the call (mcp-guard approve "):
				waiting++
			case string(m.ID) == "5" && i == len(msgs)-1 && waiting > 0:
				if !strings.Contains(m.line, "for the operator's approval and was not made") {
					t.Fatalf("the answer after the wait: %s", m.line)
				}
				return
			}
		}
		t.Fatalf("HTTP %d: want progress naming the approval, then the answer, on the call's stream; got %+v", code, msgs)
	})
}

// A plain call with headers mcp-guard refuses (not JSON, a protocol
// version it does not speak) is refused before any path serves it: 400,
// and nothing reaches the upstream. The same call with good headers is
// answered.
func TestWalk_HTTPBadHeadersRefusedBeforeAnyPath(t *testing.T) {
	walk(t, func(t *testing.T) {
		p := newMemProxy(t, allowAll, [2]string{"db", fastScript})
		h := startHTTPHost(t, p.Proxy).session(initBody)
		const call = `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"db__echo","arguments":{}}}`
		for _, c := range []struct {
			what   string
			header map[string]string
		}{
			{"a text/plain body", map[string]string{"Content-Type": "text/plain"}},
			{"an unknown protocol version", map[string]string{"Mcp-Protocol-Version": "1999-01-01"}},
		} {
			resp := h.do(http.MethodPost, call, c.header)
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest {
				t.Errorf("%s: HTTP %d %s; want 400", c.what, resp.StatusCode, b)
			}
		}
		if got := len(p.received(t, "db", "tools/call")); got != 0 {
			t.Fatalf("the upstream got %d calls from refused requests", got)
		}
		if a := h.postRaw(call); a.code != http.StatusOK || !strings.Contains(a.body, `"result"`) {
			t.Fatalf("the same call with good headers: HTTP %d %s", a.code, a.body)
		}
	})
}

// A sampling request goes to the session's GET stream, not the POST of
// the call that caused it (only elicitation goes on the call's own
// stream), as mcp-go's transport sent it: both paths ask the same way.
func TestWalk_HTTPFastPathSamplingAskedOnTheGETStreamOnBothPaths(t *testing.T) {
	walk(t, func(t *testing.T) {
		script := `{"tools":[{"name":"sample","inputSchema":{"type":"object"}}],"calls":{"sample":{"do":"serverRequest","method":"sampling/createMessage","timeoutMs":8000,
 "params":{"messages":[{"role":"user","content":{"type":"text","text":"hi"}}],"maxTokens":5}}}}`
		p := newMemProxyGate(t, dbMayAsk(t, gate.ClientAccess{Sampling: config.AccessAllow}), nil, [2]string{"db", script})
		h := startHTTPHost(t, p.Proxy).session(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"sampling":{}},"clientInfo":{"name":"raw","version":"1"}}}`)
		get := h.do(http.MethodGet, "", nil)
		defer get.Body.Close()
		asked := make(chan rpcMsg, 4)
		go func() {
			sc := bufio.NewScanner(get.Body)
			sc.Buffer(nil, 1<<20)
			for sc.Scan() {
				var m rpcMsg
				if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok && json.Unmarshal([]byte(d), &m) == nil && m.Method == "sampling/createMessage" {
					asked <- m
				}
			}
		}()
		for _, c := range []struct{ path, body string }{
			{"fast path", `{"jsonrpc":"2.0","id":5.0,"method":"tools/call","params":{"name":"db__sample","arguments":{"n":1}}}`},
			{"handler", `{"jsonrpc":"2.0","jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"db__sample","arguments":{"n":2}}}`},
		} {
			done := make(chan []rpcMsg, 1)
			go func() {
				resp, err := h.send(http.MethodPost, c.body, nil)
				if err != nil {
					done <- nil
					return
				}
				defer resp.Body.Close()
				done <- readMessages(resp)
			}()
			select {
			case m := <-asked:
				if code, _ := h.post(`{"jsonrpc":"2.0","id":` + string(m.ID) + `,"result":{"role":"assistant","content":{"type":"text","text":"sampled"},"model":"m"}}`); code != http.StatusAccepted {
					t.Fatalf("%s: the host's answer: HTTP %d", c.path, code)
				}
			case msgs := <-done:
				t.Fatalf("%s: the call ended before the host was asked on its GET stream: %+v", c.path, msgs)
			case <-time.After(6 * time.Second):
				t.Fatalf("%s: the host was not asked on its GET stream", c.path)
			}
			msgs := <-done
			var answer rpcMsg
			for _, m := range msgs {
				if m.Method == "sampling/createMessage" {
					t.Fatalf("%s: the sampling request came on the call's own stream too: %s", c.path, m.line)
				}
				if m.Method == "" && len(m.ID) > 0 {
					answer = m
				}
			}
			if !strings.Contains(answer.line, "sampled") {
				t.Fatalf("%s: the call's answer does not carry the host's: %+v", c.path, msgs)
			}
			if c.path == "fast path" && string(answer.ID) != "5.0" {
				t.Fatalf("the plain call was not served by the fast path (answered under id %s)", answer.ID)
			}
		}
	})
}
