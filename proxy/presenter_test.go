package proxy

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/mcp-guard/mcp-guard/gate"
	"github.com/mcp-guard/mcp-guard/pin"
)

// gate's view withholds what mcp-go cannot show (Presenter): a tool whose
// annotations or _meta mcp-go cannot read or whose header annotations it
// refuses, an item its types cannot read, a template its parser refuses.
// What it shows, it shows under the exposed name or host URI.
func TestPresenter_ShowsWhatMCPGoCanAndNothingElse(t *testing.T) {
	tool := func(raw string) pin.Tool {
		t.Helper()
		tl, err := pin.ParseTool([]byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		return tl
	}
	for _, c := range []struct {
		raw, refused string
	}{
		{`{"name":"x","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true},"_meta":{"k":1}}`, ""},
		{`{"name":"x","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":"yes"}}`, "annotations: "},
		{`{"name":"x","inputSchema":{"type":"object","properties":{"where":{"type":"string","x-mcp-header":"Where"}}}}`, ""},
		{`{"name":"x","inputSchema":{"type":"object","properties":{"where":{"type":"object","x-mcp-header":"Where"}}}}`, "inputSchema: "},
	} {
		err := Presenter{}.ShowTool("s__x", tool(c.raw))
		if (err == nil) != (c.refused == "") || (err != nil && !strings.HasPrefix(err.Error(), c.refused)) {
			t.Errorf("%s: %v; want refused %q", c.raw, err, c.refused)
		}
	}
	item := func(kind pin.ItemKind, obj string) pin.Item {
		t.Helper()
		field := map[pin.ItemKind]string{pin.Prompts: "prompts", pin.Resources: "resources", pin.Templates: "resourceTemplates"}[kind]
		pg, err := pin.SplitItems(kind, []byte(`{"`+field+`":[`+obj+`]}`))
		if err != nil {
			t.Fatal(err)
		}
		return pg.Items[0]
	}
	for _, c := range []struct {
		it      pin.Item
		host    string
		field   string
		refused bool
	}{
		{item(pin.Prompts, `{"name":"x","arguments":[{"name":"a"}]}`), "s__x", "name", false},
		{item(pin.Prompts, `{"name":"x","arguments":5}`), "s__x", "", true},
		{item(pin.Resources, `{"uri":"test://x","name":"n"}`), "mcp-guard://s/test://x", "uri", false},
		{item(pin.Resources, `{"uri":"test://x","name":7}`), "mcp-guard://s/test://x", "", true},
		{item(pin.Templates, `{"uriTemplate":"test://x/{id}","name":"n"}`), "mcp-guard://s/test://x/{id}", "uriTemplate", false},
		{item(pin.Templates, `{"uriTemplate":"test://x/{id","name":"n"}`), "mcp-guard://s/test://x/{id", "", true},
	} {
		err := Presenter{}.ShowItem(c.host, c.it)
		if (err != nil) != c.refused {
			t.Errorf("%s: %v; want refused %v", c.it.Raw, err, c.refused)
			continue
		}
		if c.refused {
			continue
		}
		b, err := hostItemJSON(gate.ExposedItem{Item: c.it, Host: c.host})
		var m map[string]any
		if err != nil || json.Unmarshal(b, &m) != nil || fmt.Sprint(m[c.field]) != c.host {
			t.Errorf("%s: mcp-go lists %s (%v); want %s = %q", c.it.Raw, b, err, c.field, c.host)
		}
	}
	if (Presenter{}).ParseTemplate("test://x/{a") == nil || (Presenter{}).ParseTemplate("test://x/{a}") != nil {
		t.Error("templates read other than by mcp-go's parser")
	}
}
