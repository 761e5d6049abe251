package gate

import (
	"testing"

	"github.com/mcp-guard/mcp-guard/classify"
	"github.com/mcp-guard/mcp-guard/config"
)

// What a server may ask of the host is offered at initialize and admitted
// on its connection exactly as its config says; a server the gate was not
// told of may ask nothing.
func TestClientAccess_OffersAndAdmitsOnlyWhatTheConfigSays(t *testing.T) {
	rules, err := classify.Compile(nil)
	if err != nil {
		t.Fatal(err)
	}
	g := New(rules, WithClientAccess(map[string]ClientAccess{
		"all":   {Sampling: config.AccessAllow, Elicitation: config.AccessAsk, Roots: []string{"file:///w"}},
		"none":  {},
		"empty": {Roots: []string{}}, // roots = []: answered, with none
	}))
	for _, c := range []struct {
		server, caps   string
		admits, denies []string
	}{
		{"all", `{"elicitation":{"form":{},"url":{}},"roots":{"listChanged":false},"sampling":{}}`,
			[]string{"sampling/createMessage", "elicitation/create", "roots/list"}, []string{"ping", "tools/call"}},
		{"none", `{}`, nil, []string{"sampling/createMessage", "elicitation/create", "roots/list"}},
		{"empty", `{"roots":{"listChanged":false}}`, []string{"roots/list"}, []string{"sampling/createMessage", "elicitation/create"}},
		{"unknown", `{}`, nil, []string{"sampling/createMessage", "elicitation/create", "roots/list"}},
	} {
		if got := string(g.ClientAccess(c.server).Capabilities()); got != c.caps {
			t.Errorf("%s offers %s, want %s", c.server, got, c.caps)
		}
		for _, m := range c.admits {
			if !g.AdmitsClient(c.server, m) {
				t.Errorf("%s: %s refused", c.server, m)
			}
		}
		for _, m := range c.denies {
			if g.AdmitsClient(c.server, m) {
				t.Errorf("%s: %s admitted", c.server, m)
			}
		}
	}
	if got := string(g.ClientAccess("all").RootsResult()); got != `{"roots":[{"uri":"file:///w"}]}` {
		t.Errorf("roots answer %s", got)
	}
	if got := string(g.ClientAccess("empty").RootsResult()); got != `{"roots":[]}` {
		t.Errorf("empty roots answer %s", got)
	}
}
