package proxy

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// FuzzHostResultFastReadsAsEncodingJSON holds the one-pass reading of an
// upstream's tool result to encoding/json's (hostResultJSON): whatever
// hostResultFast accepts, encoding/json reads without error into the same
// content items, structured content, isError and _meta.
func FuzzHostResultFastReadsAsEncodingJSON(f *testing.F) {
	for _, s := range []string{
		`{"content":[{"type":"text","text":"hi"}]}`,
		`{"content":[{"type":"text","text":"a"},{"type":"image","data":"AA==","mimeType":"image/png"}],"isError":true,"structuredContent":{"a":1},"_meta":{"k":"v","n":null}}`,
		`{"content":[],"structuredContent":null,"_meta":{}}`, `{"content":null}`, `{"content":{}}`,
		`{"Content":[]}`, `{"content":[],"isError":"yes"}`, `{"content":[],"_meta":[1]}`,
		`{"content":[1, "x" ,null],"_meta":{"\u00e9":1}}`, `{"content":[]} {}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		got, ok := hostResultFast(raw)
		if !ok {
			return
		}
		want, err := hostResultJSON(raw)
		if err != nil {
			t.Fatalf("hostResultFast accepted %q, encoding/json: %v", raw, err)
		}
		if got.IsError != want.IsError || string(got.RawStructuredContent) != string(want.RawStructuredContent) ||
			len(got.Content) != len(want.Content) || !reflect.DeepEqual(metaOf(got), metaOf(want)) {
			t.Fatalf("%q:\nfast %+v\njson %+v", raw, got, want)
		}
		for i := range got.Content {
			if g, w := got.Content[i].(rawContent).raw, want.Content[i].(rawContent).raw; string(g) != string(w) {
				t.Fatalf("%q: content %d is %q, encoding/json reads %q", raw, i, g, w)
			}
		}
	})
}

func metaOf(r *mcp.CallToolResult) map[string]string {
	if r.Meta == nil {
		return nil
	}
	out := map[string]string{}
	for k, v := range r.Meta.AdditionalFields {
		out[k] = string(v.(json.RawMessage))
	}
	return out
}
