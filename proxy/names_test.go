package proxy

import (
	"slices"
	"strings"
	"testing"

	"github.com/mcp-guard/mcp-guard/classify"
)

var allowAll = []classify.Rule{{Server: "*", Tool: "*", Class: classify.Read, Action: classify.Allow}}

// Two tools that would share an exposed name are both refused: neither is
// shown, a call to the name is refused and recorded, and nothing reaches
// the server; a shown tool beside them runs. Server names cannot contain
// "__" (the config refuses them), so the way two tools can share a name is
// one server listing a name twice.
func TestView_CollidingNamesRefusedBoth(t *testing.T) {
	walk(t, func(t *testing.T) {
		p := newMemProxy(t, allowAll,
			[2]string{"a", `{"tools":[{"name":"x__y","inputSchema":{"type":"object"}},{"name":"solo","inputSchema":{"type":"object"}}]}`},
			[2]string{"d", `{"tools":[{"name":"same","inputSchema":{"type":"object"}},{"name":"same","description":"impostor","inputSchema":{"type":"object"}}]}`})
		h := startMemHost(t, p.Proxy)
		got := h.toolNames("l1")
		slices.Sort(got)
		if want := []string{"a__solo", "a__x__y"}; !slices.Equal(got, want) {
			t.Fatalf("host sees %v, want %v (both d__same refused)", got, want)
		}
		if r := h.request("c1", "tools/call", `{"name":"d__same","arguments":{}}`); r.Error == nil && !strings.Contains(string(r.Result), `"isError":true`) {
			t.Fatalf("d__same ran: %s", r.Result)
		}
		if got := p.received(t, "d", "tools/call"); len(got) != 0 {
			t.Fatalf("d got %d calls", len(got))
		}
		if r := h.request("c2", "tools/call", `{"name":"a__solo","arguments":{}}`); r.Error != nil || strings.Contains(string(r.Result), `"isError":true`) {
			t.Fatalf("a__solo: %+v %s", r.Error, r.Result)
		}
		if got := p.received(t, "a", "tools/call"); len(got) != 1 {
			t.Fatalf("a got %d calls, want 1", len(got))
		}
		var refused, allowed int
		for _, r := range p.calls(t) {
			switch {
			case r.Exposed == "d__same" && r.Server == "d" && r.Tool == "same" && r.State == "refused" && r.Decision == "unknown_tool" &&
				strings.Contains(r.Reason, "more than one tool named"):
				refused++
			case r.Exposed == "a__solo" && r.Decision == "allow":
				allowed++
			default:
				t.Errorf("unexpected call row: %+v", r)
			}
		}
		if refused != 1 || allowed != 1 {
			t.Fatalf("ledger: %d refusals of d__same, %d allowed a__solo; want 1 and 1", refused, allowed)
		}
	})
}

// A name the pattern refuses (too long, a space) is withheld and named in
// the report; a name with "__" from the server's own tool name is shown.
func TestView_InvalidExposedNamesAreRefused(t *testing.T) {
	walk(t, func(t *testing.T) {
		long := strings.Repeat("x", 62) // "a__" + 62 = 65 characters
		p := newMemProxy(t, allowAll,
			[2]string{"a", `{"tools":[{"name":"b__c","inputSchema":{"type":"object"}},{"name":"ok","inputSchema":{"type":"object"}},{"name":"` + long + `","inputSchema":{"type":"object"}},{"name":"sp ace","inputSchema":{"type":"object"}}]}`})
		h := startMemHost(t, p.Proxy)
		got := h.toolNames("l1")
		slices.Sort(got)
		if want := []string{"a__b__c", "a__ok"}; !slices.Equal(got, want) {
			t.Fatalf("host sees %v, want %v", got, want)
		}
		hidden := map[string]string{}
		for _, r := range p.Tools() {
			if r.Exposed == "" {
				hidden[r.Tool] = r.Hidden
			}
		}
		for _, name := range []string{long, "sp ace"} {
			if !strings.Contains(hidden[name], "does not match") {
				t.Errorf("%q: hidden for %q, want the name pattern named", name, hidden[name])
			}
		}
	})
}
