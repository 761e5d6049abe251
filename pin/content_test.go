package pin

import (
	"strings"
	"testing"
)

// Each item keeps its exact bytes; a change anywhere in them changes the
// digest; a result of the wrong shape is refused.
func TestSplitItems_KeepsEachItemsRawBytes(t *testing.T) {
	res := []byte(`{"prompts":[ {"name":"a", "description":"x"},{"name":"b","arguments":[{"name":"c","required":true}],"x-new":1}],"nextCursor":"n2"}`)
	pg, err := SplitItems(Prompts, res)
	if err != nil {
		t.Fatal(err)
	}
	if len(pg.Items) != 2 || pg.NextCursor != "n2" {
		t.Fatalf("page = %+v", pg)
	}
	if string(pg.Items[0].Raw) != `{"name":"a", "description":"x"}` || pg.Items[0].Key != "a" || pg.Items[1].Key != "b" {
		t.Fatalf("items = %q %q", pg.Items[0].Raw, pg.Items[1].Raw)
	}
	other, _ := SplitItems(Prompts, []byte(`{"prompts":[{"name":"a","description":"x"},{"name":"b","arguments":[{"name":"c","required":true}],"x-new":2}]}`))
	if other.Items[0].Digest() == pg.Items[0].Digest() || other.Items[1].Digest() == pg.Items[1].Digest() {
		t.Error("a whitespace change and an unknown field's change must change the digest")
	}
	if other.NextCursor != "" {
		t.Errorf("no nextCursor read as %q", other.NextCursor)
	}

	rs, err := SplitItems(Resources, []byte(`{"resources":[{"uri":"file:///a","name":"a"}]}`))
	if err != nil || rs.Items[0].Key != "file:///a" || rs.Items[0].Kind != Resources {
		t.Fatalf("resources: %+v %v", rs, err)
	}
	ts, err := SplitItems(Templates, []byte(`{"resourceTemplates":[{"uriTemplate":"file:///{p}","name":"t"}]}`))
	if err != nil || ts.Items[0].Key != "file:///{p}" {
		t.Fatalf("templates: %+v %v", ts, err)
	}
	for _, bad := range []struct {
		kind ItemKind
		res  string
		msg  string
	}{
		{Prompts, `{"tools":[]}`, `no "prompts" array`},
		{Prompts, `{"prompts":null}`, `no "prompts" array`},
		{Prompts, `{"prompts":{}}`, `"prompts"`},
		{Prompts, `{"prompts":[1]}`, "prompts[0]: not an object"},
		{Prompts, `{"prompts":[{"title":"x"}]}`, `prompts[0]: no "name" string`},
		{Resources, `{"resources":[{"uri":""}]}`, `resources[0]: no "uri" string`},
		{Templates, `{"resourceTemplates":[{"uriTemplate":3}]}`, `no "uriTemplate" string`},
		{Resources, `{"resources":[],"nextCursor":5}`, "nextCursor"},
		{Resources, `not json`, "resources/list result"},
	} {
		if _, err := SplitItems(bad.kind, []byte(bad.res)); err == nil || !strings.Contains(err.Error(), bad.msg) {
			t.Errorf("SplitItems(%s) = %v; want an error containing %q", bad.res, err, bad.msg)
		}
	}
}

// Every string of an item is checked, the arguments of a prompt and the
// URI of a resource included; ordinary text passes.
func TestCheckItemText(t *testing.T) {
	if p := CheckItemText([]byte(`{"name":"café-prompt","description":"Résumé 👩‍💻\nline","arguments":[{"name":"city","description":"東京"}]}`)); len(p) != 0 {
		t.Fatalf("ordinary text refused: %v", p)
	}
	p := CheckItemText([]byte(`{"name":"p","arguments":[{"name":"c","description":"ok\u202eevil"}],"_meta":{"k\u200bey":"v"}}`))
	got := DescribeProblems(p)
	for _, want := range []string{"arguments/0/description has U+202E (bidi control)", "_meta/k\\u{200B}ey has U+200B (zero-width)"} {
		if !strings.Contains(got, want) {
			t.Errorf("problems %q lack %q", got, want)
		}
	}
	if p := CheckItemText([]byte(`{"uri":"file:///a\u001b[31m","name":"r"}`)); len(p) != 1 || p[0].Where != "uri" || p[0].Kind != KindEscape {
		t.Errorf("uri escape: %+v", p)
	}
}

func TestItemPinNames(t *testing.T) {
	if Prompts.PinName("simple") != "prompt:simple" || Resources.PinName("test://x/1") != "resource:test://x/1" || Templates.PinName("t/{id}") != "template:t/{id}" {
		t.Error("pin names")
	}
	for name, want := range map[string]bool{"prompt:x": true, "resource:": true, "template:a": true, "oauth:issuer": true, "oauth": false, "prompts": false, "read_file": false, "": false} {
		if IsItemPinName(name) != want {
			t.Errorf("IsItemPinName(%q) = %v", name, !want)
		}
	}
	if Prompts.Method() != "prompts/list" || Templates.Method() != "resources/templates/list" || Resources.KeyField() != "uri" {
		t.Error("methods")
	}
}
