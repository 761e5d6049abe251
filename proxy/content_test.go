package proxy

import (
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// A host URI maps back to exactly the server and upstream URI it came from;
// anything else maps to nothing.
func TestHostURI_MapsBackExactly(t *testing.T) {
	p := &Proxy{order: []string{"fs", "every"}}
	for _, uri := range []string{"file:///home/me/a b?x#y", "demo://resource/static/document/features.md", "x", "mcp-guard://fs/nested"} {
		for _, srv := range p.order {
			s, u, ok := p.upstreamURI(HostURI(srv, uri))
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

func TestParseContentCaps(t *testing.T) {
	for in, want := range map[string]contentCaps{
		`{"capabilities":{"tools":{}}}`:                                      {},
		`{"capabilities":{"prompts":{},"resources":{"subscribe":true}}}`:     {prompts: true, resources: true, subscribe: true},
		`{"capabilities":{"prompts":null,"resources":{"listChanged":true}}}`: {resources: true},
		`not json`: {},
	} {
		if got := parseContentCaps(json.RawMessage(in)); got != want {
			t.Errorf("parseContentCaps(%s) = %+v, want %+v", in, got, want)
		}
	}
}

// prompts/list_changed and resources/list_changed relist like the tools'
// list_changed; resources/updated is queued for the relay, never blocking
// the read loop.
func TestContentNotify(t *testing.T) {
	u := newUpstream(UpstreamSpec{Name: "x"}, Limits{}, "v", slog.New(slog.DiscardHandler))
	for _, m := range []string{"notifications/prompts/list_changed", "notifications/resources/list_changed"} {
		if !u.contentNotify(m, nil) {
			t.Fatalf("%s not taken", m)
		}
		select {
		case <-u.listChanged:
		default:
			t.Fatalf("%s did not ask for a relist", m)
		}
	}
	for i := range cap(u.updated) + 5 { // a full queue drops, never blocks
		u.contentNotify("notifications/resources/updated", json.RawMessage(`{"uri":"test://`+strings.Repeat("a", i)+`"}`))
	}
	if got := <-u.updated; got != "test://" {
		t.Fatalf("first update %q", got)
	}
	if u.contentNotify("notifications/tools/list_changed", nil) || u.contentNotify("notifications/message", nil) {
		t.Fatal("took a notification that is not about prompts or resources")
	}
}

// A read's content blocks reach the host as sent, their uri mapped to the
// host URI; a prompt's messages keep each content block.
func TestHostResults(t *testing.T) {
	cs, err := hostContents("fs", json.RawMessage(`{"contents":[{"uri":"file:///a","text":"x <y>","x-extra":1},{"blob":"AAE=","uri":"file:///b","mimeType":"application/octet-stream"}]}`))
	if err != nil || len(cs) != 2 {
		t.Fatalf("hostContents: %v %v", cs, err)
	}
	b, _ := json.Marshal(mcp.ReadResourceResult{Contents: cs})
	var back struct {
		Contents []map[string]any `json:"contents"`
	}
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Contents[0]["uri"] != "mcp-guard://fs/file:///a" || back.Contents[0]["text"] != "x <y>" || back.Contents[0]["x-extra"] != 1.0 ||
		back.Contents[1]["uri"] != "mcp-guard://fs/file:///b" || back.Contents[1]["blob"] != "AAE=" {
		t.Fatalf("contents as the host gets them: %s", b)
	}
	for _, bad := range []string{`{}`, `{"contents":[1]}`, `[]`} {
		if _, err := hostContents("fs", json.RawMessage(bad)); err == nil {
			t.Errorf("hostContents(%s) accepted", bad)
		}
	}
	pr, err := hostPromptResult(json.RawMessage(`{"description":"d","messages":[{"role":"user","content":{"type":"resource","resource":{"uri":"x://1","text":"t"}}}],"_meta":{"k":1}}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ = json.Marshal(pr)
	if !strings.Contains(string(b), `"content":{"type":"resource","resource":{"uri":"x://1","text":"t"}}`) || !strings.Contains(string(b), `"description":"d"`) {
		t.Fatalf("prompt result as the host gets it: %s", b)
	}
	for _, bad := range []string{`{}`, `{"messages":[{"role":"user"}]}`} {
		if _, err := hostPromptResult(json.RawMessage(bad)); err == nil {
			t.Errorf("hostPromptResult(%s) accepted", bad)
		}
	}
}
