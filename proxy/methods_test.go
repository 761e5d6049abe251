package proxy

import "testing"

// A 2026-07-28 result is the result with mcp-guard's envelope: its
// serverInfo added to the result's own _meta, whose other members stay.
func TestModernResult(t *testing.T) {
	p := &Proxy{opts: Options{Version: "1.2"}}
	for _, c := range []struct{ method, in, want string }{
		{"prompts/get", `{"messages":[]}`, `{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"mcp-guard","version":"1.2"}},"resultType":"complete","messages":[]}`},
		{"prompts/get", `{"_meta":{"k":1},"messages":[]}`, `{"resultType":"complete","_meta":{"k":1,"io.modelcontextprotocol/serverInfo":{"name":"mcp-guard","version":"1.2"}},"messages":[]}`},
		{"resources/read", `{"ttlMs":60000,"cacheScope":"public","contents":[]}`, `{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"mcp-guard","version":"1.2"}},"resultType":"complete","ttlMs":0,"cacheScope":"private","contents":[]}`},
		{"resources/read", `{}`, `{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"mcp-guard","version":"1.2"}},"resultType":"complete","ttlMs":0,"cacheScope":"private"}`},
	} {
		if got := string(p.modernResult([]byte(c.in), c.method)); got != c.want {
			t.Errorf("modernResult(%s, %s):\n got  %s\n want %s", c.in, c.method, got, c.want)
		}
	}
}
