package proxy

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// Two hosts at once over HTTP: each has its own session in the ledger and
// its own limits; the endpoint refuses a foreign Host or Origin (403), a
// missing or wrong token (401) and an oversized body (413), and nothing it
// refuses reaches mcp-go, the ledger or the upstream.
func TestWalk_HTTPHostSessionsAndGuards(t *testing.T) {
	walk(t, func(t *testing.T) {
		const token = "host-token-0123456789abcdef"
		p := newMemProxyWith(t, mustRules(t, allowAll), func(o *Options) {
			o.Limits.CallsPerSession, o.Limits.MessageBytes = 2, 65536
		}, [2]string{"notes", `{"tools":[{"name":"read","inputSchema":{"type":"object"}}]}`})
		h := tokenHTTPHost(t, p.Proxy, HTTPOptions{Token: token})
		a, b := h.sdk(t, "2025-11-25", nil), h.sdk(t, "2025-11-25", nil)
		for i := range 2 {
			if res, err := callTool(a, "notes__read", map[string]any{}); err != nil || res.IsError {
				t.Fatalf("host A call %d: %v %+v", i, err, res)
			}
		}
		if res, err := callTool(a, "notes__read", map[string]any{}); err != nil || !res.IsError || !strings.Contains(textOf(res), "calls_per_session") {
			t.Fatalf("host A's third call: %v %+v; want its session limit", err, res)
		}
		if res, err := callTool(b, "notes__read", map[string]any{}); err != nil || res.IsError {
			t.Fatalf("host B was limited by host A's calls: %v %+v", err, res)
		}
		rows := p.calls(t)
		sessions := map[string]int{}
		for _, r := range rows {
			sessions[r.SessionID]++
		}
		if len(rows) != 4 || len(sessions) != 2 {
			t.Fatalf("ledger has %d calls in sessions %v; want 4 calls in 2 host sessions", len(rows), sessions)
		}
		upstreamCalls := len(p.received(t, "notes", "tools/call"))

		raw := &httpHost{t: t, url: h.url, client: &http.Client{Transport: h.client.Transport.(bearer).next}}
		call1 := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"notes__read","arguments":{}}}`
		big := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"notes__read","arguments":{"pad":"` + strings.Repeat("x", 70000) + `"}}}`
		good := map[string]string{"Authorization": "Bearer " + token}
		with := func(k, v string) map[string]string {
			m := map[string]string{k: v}
			for gk, gv := range good {
				if gk != k {
					m[gk] = gv
				}
			}
			return m
		}
		for _, c := range []struct {
			what   string
			body   string
			header map[string]string
			want   int
		}{
			{"a foreign Host (DNS rebinding)", initBody, with("Host", "evil.example"), 403},
			{"a foreign Host on a call", call1, with("Host", "evil.example:8080"), 403},
			{"a foreign Origin", initBody, with("Origin", "http://evil.example"), 403},
			{"the null Origin", initBody, with("Origin", "null"), 403},
			{"no token", initBody, map[string]string{}, 401},
			{"a wrong token", initBody, with("Authorization", "Bearer host-token-0123456789abcdeX"), 401},
			{"a token as Basic", initBody, with("Authorization", "Basic "+token), 401},
			{"a body over message_bytes", big, good, 413},
			{"a chunked body over message_bytes", "chunked:" + big, good, 413},
			{"a local Origin", initBody, with("Origin", "http://localhost:3000"), 200},
		} {
			resp := raw.do(http.MethodPost, c.body, c.header)
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != c.want {
				t.Errorf("%s: HTTP %d, want %d", c.what, resp.StatusCode, c.want)
			}
		}
		if n := len(p.received(t, "notes", "tools/call")); n != upstreamCalls {
			t.Fatalf("refused requests reached the upstream: %d calls, was %d", n, upstreamCalls)
		}
		if rows := p.calls(t); len(rows) != 4 {
			t.Fatalf("refused requests reached the ledger: %d calls", len(rows))
		}
	})
}
