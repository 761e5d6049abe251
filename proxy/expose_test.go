package proxy

import (
	"strings"
	"testing"

	"github.com/mcp-guard/mcp-guard/pin"
)

// Two tools that would get the same exposed name are both refused, never
// renamed or picked; invalid names are refused with the pattern.
func TestExposeAll_CollisionsAndInvalidNamesRefused(t *testing.T) {
	tool := func(name string) pin.Tool { return pin.Tool{Name: name} }
	exp, refused := exposeAll([]candidate{
		{server: "a", tool: tool("x")},
		{server: "a", tool: tool("dup")},
		{server: "a", tool: tool("dup")},
		{server: "a", tool: tool("has space")},
		{server: "a", tool: tool(strings.Repeat("y", 62))},
	})
	if len(exp) != 1 || exp[0].Name != "a__x" {
		t.Fatalf("exposed %+v; want only a__x", exp)
	}
	var collided, invalid int
	for _, r := range refused {
		switch {
		case strings.Contains(r.Reason, "collides"):
			collided++
		case strings.Contains(r.Reason, "does not match"):
			invalid++
		}
	}
	if collided != 2 || invalid != 2 {
		t.Fatalf("refused %+v; want both duplicates and both invalid names", refused)
	}
}
