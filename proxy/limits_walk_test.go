package proxy

import (
	"context"
	"strings"
	"testing"
)

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
