package main

import (
	"context"
	"strings"
	"testing"
)

// progressRules allow every tool of the fake upstream "db".
const progressRules = `
[[rule]]
server = "db"
tool = "*"
class = "read"
action = "allow"
`

// A tool whose outputSchema does not compile (or refers outside itself) is
// refused when it is listed, like one with such an inputSchema: never
// pinned, never exposed, and a call to it is refused before the upstream.
func TestOutputSchema_UncompilableRefusedAtPin(t *testing.T) {
	e := newEnv(t)
	script := `{"tools":[
{"name":"ok","inputSchema":{"type":"object"}},
{"name":"webout","inputSchema":{"type":"object"},"outputSchema":{"type":"object","properties":{"x":{"$ref":"https://evil.example/s.json"}}}},
{"name":"badout","inputSchema":{"type":"object"},"outputSchema":{"type":"object","properties":{"x":{"type":"nonsense"}}}}]}`
	cfg := e.config(e.fake("db", script), progressRules)
	out, code := e.mcpGuard("tools", "--config", cfg)
	if code != 0 || !strings.Contains(out, "refused: outputSchema: outputSchema refers outside itself") ||
		!strings.Contains(out, "refused: outputSchema: outputSchema is not a valid JSON Schema") {
		t.Fatalf("tools (exit %d):\n%s", code, out)
	}
	h := e.connect(cfg, "")
	if names := strings.Join(h.toolNames(t), ","); names != "db__ok" {
		t.Fatalf("host sees %s, want db__ok alone", names)
	}
	res, err := h.call(t, "db__webout", map[string]any{})
	if err == nil && (res == nil || !res.IsError) {
		t.Fatalf("call to a refused tool: %v %v", err, res)
	}
	if n := len(e.calls("db")); n != 0 {
		t.Fatalf("upstream got %d calls", n)
	}
	pins, _ := e.openLedger().Pins(context.Background(), "db")
	for _, p := range pins {
		if p.Tool == "webout" || p.Tool == "badout" {
			t.Fatalf("refused tool pinned: %+v", p)
		}
	}
}
