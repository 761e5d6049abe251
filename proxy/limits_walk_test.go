package proxy

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mcp-guard/mcp-guard/classify"
)

// The walks of the session limits: what the host is told, what reaches
// the upstream and what the ledger holds when a limit refuses or cuts a
// call.

var limitTools = `{"tools":[
{"name":"slow","inputSchema":{"type":"object"}},
{"name":"echo","inputSchema":{"type":"object"}},
{"name":"dump","inputSchema":{"type":"object"}},
{"name":"small","inputSchema":{"type":"object"}}],
"calls":{"slow":{"do":"sleep","ms":30000},"dump":{"do":"result","result":{"content":[{"type":"text","text":"` + bigText + `"}]}}}}`

var bigText = strings.Repeat("x", 5000)

var limitRules = []classify.Rule{{Server: "db", Tool: "*", Class: classify.Read, Action: classify.Allow}}

// The same call with the same arguments, in a row, is denied past the limit
// with the limit's name; the upstream saw only the calls within it.
func TestWalk_IdenticalRepeatsDeniedAndNamed(t *testing.T) {
	walk(t, func(t *testing.T) {
		p := newMemProxyWith(t, mustRules(t, limitRules), func(o *Options) { o.Limits.IdenticalCallRepeats = 2 }, [2]string{"db", limitTools})
		h := startMemHost(t, p.Proxy)
		for i := range 2 {
			if r := h.request("c"+string(rune('0'+i)), "tools/call", `{"name":"db__echo","arguments":{"q":1}}`); r.Error != nil || strings.Contains(string(r.Result), `"isError":true`) {
				t.Fatalf("call %d: %+v %s", i, r.Error, r.Result)
			}
		}
		r := h.request("c2", "tools/call", `{"name":"db__echo","arguments":{"q":1}}`)
		if r.Error != nil || !strings.Contains(string(r.Result), `"isError":true`) || !strings.Contains(string(r.Result), "limits.identical_call_repeats") {
			t.Fatalf("3rd identical call: %+v %s", r.Error, r.Result)
		}
		if n := len(p.received(t, "db", "tools/call")); n != 2 {
			t.Fatalf("upstream got %d calls, want 2", n)
		}
		if row := p.calls(t)[0]; row.Decision != "deny" || row.Reason != "limit: identical_call_repeats" {
			t.Fatalf("ledger row %+v", row)
		}
	})
}

// A result over limits.result_bytes is replaced by an error result; the
// ledger keeps the digest and size of what the upstream sent.
func TestWalk_OversizedResultReplaced(t *testing.T) {
	walk(t, func(t *testing.T) {
		p := newMemProxyWith(t, mustRules(t, limitRules), func(o *Options) { o.Limits.ResultBytes = 4096 }, [2]string{"db", limitTools})
		h := startMemHost(t, p.Proxy)
		r := h.request("big", "tools/call", `{"name":"db__dump","arguments":{}}`)
		if r.Error != nil || !strings.Contains(string(r.Result), `"isError":true`) || !strings.Contains(string(r.Result), "over limits.result_bytes (4096)") || strings.Contains(string(r.Result), "xxxx") {
			t.Fatalf("oversized result: %+v %s", r.Error, r.Result)
		}
		if r := h.request("small", "tools/call", `{"name":"db__small","arguments":{}}`); r.Error != nil || strings.Contains(string(r.Result), `"isError":true`) {
			t.Fatalf("small result: %+v %s", r.Error, r.Result)
		}
		eventually(t, "the outcome", func() bool { return p.call(t, "dump").State == "done" })
		row := p.call(t, "dump")
		want := len(`{"content":[{"type":"text","text":"` + bigText + `"}]}`)
		if row.ResultBytes != int64(want) || len(row.ResultDigest) != 64 || !row.IsError || !strings.Contains(row.Err, "limit: result_bytes") {
			t.Fatalf("ledger row %+v", row)
		}
	})
}

// A call over limits.call_timeout is cancelled upstream and recorded as
// failed with the limit named. The server would take 30 s: in the bubble
// the timeout passes at once.
func TestWalk_CallTimeoutCancelsUpstreamAndRecords(t *testing.T) {
	walk(t, func(t *testing.T) {
		p := newMemProxyWith(t, mustRules(t, limitRules), func(o *Options) { o.Limits.CallTimeout = time.Second }, [2]string{"db", limitTools})
		h := startMemHost(t, p.Proxy)
		r := h.request("slow", "tools/call", `{"name":"db__slow","arguments":{}}`)
		if r.Error == nil || !strings.Contains(r.Error.Message, "did not answer within 1s") {
			t.Fatalf("slow call: %+v %s", r.Error, r.Result)
		}
		calls := p.received(t, "db", "tools/call")
		if len(calls) != 1 {
			t.Fatalf("upstream got %v", calls)
		}
		id := idOf(t, calls[0])
		eventually(t, "notifications/cancelled upstream", func() bool {
			for _, l := range p.received(t, "db", "notifications/cancelled") {
				if strings.Contains(l, `"requestId":`+id) {
					return true
				}
			}
			return false
		})
		eventually(t, "the failure recorded", func() bool { return p.call(t, "slow").State == "failed" })
		if row := p.call(t, "slow"); !strings.Contains(row.Err, "did not answer within 1s") {
			t.Fatalf("ledger row %+v", row)
		}
	})
}

// After consecutive_denials refusals in a row, the session refuses every
// call, even an allowed one, and nothing reaches the upstream, until the
// operator's reset (mcp-guard reset, a request in the ledger) reaches the
// proxy or mcp-guard restarts.
func TestWalk_ConsecutiveDenialsStopTheSession(t *testing.T) {
	walk(t, func(t *testing.T) {
		p := newMemProxyWith(t, mustRules(t, dbRules), func(o *Options) { o.Limits.ConsecutiveDenials = 3 }, [2]string{"db", confirmTools})
		h := startMemHost(t, p.Proxy)
		n := 0
		call := func(tool string) string {
			t.Helper()
			n++
			r := h.request("c"+itoa(n), "tools/call", `{"name":"`+tool+`","arguments":{}}`)
			if r.Error != nil {
				t.Fatalf("%s: %+v", tool, r.Error)
			}
			return string(r.Result)
		}
		for range 3 {
			call("db__drop")
		}
		if res := call("db__echo"); !strings.Contains(res, `"isError":true`) || !strings.Contains(res, "session was stopped after 3 refused calls") {
			t.Fatalf("an allowed call after 3 denials: %s", res)
		}
		if n := len(p.received(t, "db", "tools/call")); n != 0 {
			t.Fatalf("the upstream got %d calls", n)
		}
		if err := p.led.RequestReset(context.Background(), "looked at it"); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the reset to reach the proxy", func() bool {
			return !strings.Contains(call("db__echo"), `"isError":true`)
		})
		if n := len(p.received(t, "db", "tools/call")); n != 1 {
			t.Fatalf("the upstream got %d calls after the reset, want 1", n)
		}
		for range 3 {
			call("db__drop")
		}
		if res := call("db__echo"); !strings.Contains(res, "session was stopped") {
			t.Fatalf("an allowed call after 3 more denials: %s", res)
		}
		h.end()
		p.restart(t)
		h = startMemHost(t, p.Proxy)
		if res := call("db__echo"); strings.Contains(res, `"isError":true`) {
			t.Fatalf("after a restart: %s", res)
		}
	})
}
