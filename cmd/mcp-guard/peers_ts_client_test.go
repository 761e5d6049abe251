package main

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// tsHostCapabilities is a TypeScript-SDK host that answers sampling and
// elicitation with canned replies and declares roots of its own, which must
// never reach an upstream.
var tsHostCapabilities = &tsCapabilities{
	Sampling:    &tsSampling{Text: "canned reply from the TS host", Model: "ts-canned"},
	Elicitation: &tsElicitation{Action: "accept", Content: map[string]any{"name": "Ada from the TS host", "check": true}},
	Roots:       []tsRoot{{URI: "file:///ts-host/secret", Name: "the TS host's own root"}},
}

const everythingTSClientRules = everythingClientRules + `
[[rule]]
server = "every"
tool = "trigger-url-elicitation"
class = "network"
action = "allow"
`

// The official TypeScript SDK client, declaring sampling, elicitation and
// roots with canned answers, as the host of mcp-guard fronting
// server-everything. By default mcp-guard offers the server none of them,
// so the tools that would ask are not listed. Allowed in the server's
// config, sampling and elicitation (form and URL mode) reach the TS host,
// its canned answers come back through, each request served once; the
// server's roots are exactly mcp-guard's configured list, and the TS host
// is never asked for its own.
func TestPeers_TSClientSamplingElicitationRoots(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := runTS(t, e, tsPlan{
		Command: bins.guard, Args: []string{"serve", "--config", e.config(npmServer(t, "every", everythingJS, "stdio"), everythingTSClientRules)},
		Env:          map[string]string{"HOME": e.dir},
		Capabilities: tsHostCapabilities,
		Steps:        []tsStep{tsList("tools")},
	})
	c.next("initialize")
	if tools := c.next("tools").Tools; !slices.Equal(tools, []string{"every__echo"}) {
		t.Fatalf("by default the TS host sees %v; want only echo", tools)
	}
	c.wait()

	e = newEnv(t)
	work := t.TempDir()
	server := npmServer(t, "every", everythingJS, "stdio") + fmt.Sprintf("allow_sampling = true\nallow_elicitation = \"allow\"\nroots = [%q]\n", work)
	c = runTS(t, e, tsPlan{
		Command: bins.guard, Args: []string{"serve", "--config", e.config(server, everythingTSClientRules)},
		Env:          map[string]string{"HOME": e.dir},
		Capabilities: tsHostCapabilities,
		Steps: []tsStep{
			tsList("tools"),
			tsCall("sampling", "every__trigger-sampling-request", map[string]any{"prompt": "hello from the test", "maxTokens": 5}, "ok"),
			tsCall("form", "every__trigger-elicitation-request", map[string]any{}, "ok"),
			tsCall("url", "every__trigger-url-elicitation", map[string]any{"url": "https://example.com/consent", "message": "Consent, please"}, "ok"),
			tsCall("roots", "every__get-roots-list", map[string]any{}, "ok"),
		},
	})
	c.next("initialize")
	tools := c.next("tools").Tools
	slices.Sort(tools)
	if want := []string{"every__echo", "every__get-roots-list", "every__trigger-elicitation-request", "every__trigger-sampling-request", "every__trigger-url-elicitation"}; !slices.Equal(tools, want) {
		t.Fatalf("with access allowed the TS host sees %v, want %v", tools, want)
	}
	if l := c.next("sampling"); !strings.Contains(l.text(), "canned reply from the TS host") || !strings.Contains(l.text(), "ts-canned") {
		t.Fatalf("sampling through mcp-guard: %s", l.raw)
	}
	if l := c.next("form"); !strings.Contains(l.text(), "- Name: Ada from the TS host") || !strings.Contains(l.text(), "- Agreed to terms: true") {
		t.Fatalf("form elicitation through mcp-guard: %s", l.raw)
	}
	if l := c.next("url"); !strings.Contains(l.text(), "User completed the URL elicitation flow") {
		t.Fatalf("URL elicitation through mcp-guard: %s", l.raw)
	}
	roots := c.next("roots")
	if !strings.Contains(roots.text(), "file://"+work) || strings.Contains(roots.text(), "ts-host") {
		t.Fatalf("server-everything's roots through mcp-guard (want only file://%s):\n%s", work, roots.text())
	}
	c.wait()

	// Each request reached the TS host once, as the server made it.
	for step, want := range map[string]string{
		"sampling": `"text":"Resource trigger-sampling-request context: hello from the test"`,
		"form":     `"message":"Please provide inputs for the following fields:"`,
		"url":      `"url":"https://example.com/consent"`,
	} {
		got := c.servedDuring(step)
		if len(got) != 1 || !strings.Contains(string(got[0].Params), want) {
			t.Fatalf("step %s: the TS host served %d requests (%v), want one with %s", step, len(got), served(got), want)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, l := range c.served {
		if *l.Served == "roots/list" {
			t.Fatalf("mcp-guard asked the TS host for its roots: %s", l.raw)
		}
	}
}

func served(ls []tsLine) []string {
	var out []string
	for _, l := range ls {
		b, _ := json.Marshal(l.Params)
		out = append(out, *l.Served+" "+string(b))
	}
	return out
}
