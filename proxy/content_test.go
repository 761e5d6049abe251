package proxy

import (
	"encoding/json"
	"testing"

	"github.com/mcp-guard/mcp-guard/gate"
)

// A host URI maps back to exactly the server and upstream URI it came from;
// anything else maps to nothing.
func TestHostURI_MapsBackExactly(t *testing.T) {
	p := &Proxy{order: []string{"fs", "every"}}
	for _, uri := range []string{"file:///home/me/a b?x#y", "demo://resource/static/document/features.md", "x", "mcp-guard://fs/nested"} {
		for _, srv := range p.order {
			s, u, ok := p.upstreamURI(gate.HostURI(srv, uri))
			if !ok || s != srv || u != uri {
				t.Errorf("upstreamURI(HostURI(%s, %q)) = %s, %q, %v", srv, uri, s, u, ok)
			}
		}
	}
	for _, bad := range []string{"file:///a", "mcp-guard://other/file:///a", "mcp-guard://fs/", "mcp-guard://fs", "MCP-GUARD://fs/x", "mcp-guard:///fs/x", ""} {
		if s, u, ok := p.upstreamURI(bad); ok {
			t.Errorf("upstreamURI(%q) = %s, %q; want no mapping", bad, s, u)
		}
	}
}

// A read's content blocks reach the host as sent, their uri mapped to the
// host URI; a prompt's messages keep each content block.
func TestHostResults(t *testing.T) {
	raw, err := hostContents("fs", json.RawMessage(`{"contents":[{"uri":"file:///a","text":"x <y>","x-extra":1},{"blob":"AAE=","uri":"file:///b","mimeType":"application/octet-stream"}],"_meta":{"z":1}}`))
	if err != nil {
		t.Fatalf("hostContents: %v", err)
	}
	if want := `{"contents":[{"uri":"mcp-guard://fs/file:///a","text":"x <y>","x-extra":1},{"blob":"AAE=","uri":"mcp-guard://fs/file:///b","mimeType":"application/octet-stream"}],"_meta":{"z":1}}`; string(raw) != want {
		t.Fatalf("the read's bytes as the host gets them:\n got  %s\n want %s", raw, want)
	}
	for _, bad := range []string{`{}`, `{"contents":[1]}`, `[]`} {
		if _, err := hostContents("fs", json.RawMessage(bad)); err == nil {
			t.Errorf("hostContents(%s) accepted", bad)
		}
	}
	if err := readablePrompt(json.RawMessage(`{"description":"d","messages":[{"role":"user","content":{"type":"resource","resource":{"uri":"x://1","text":"t"}}}],"_meta":{"k":1}}`)); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{`{}`, `{"messages":[{"role":"user"}]}`} {
		if err := readablePrompt(json.RawMessage(bad)); err == nil {
			t.Errorf("readablePrompt(%s) accepted", bad)
		}
	}
}
