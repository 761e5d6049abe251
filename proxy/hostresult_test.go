package proxy

import (
	"testing"
)

// FuzzPlainToolResultReadsAsEncodingJSON holds the one-pass reading of an
// upstream's tool result to encoding/json's (jsonToolResult): whatever
// plainToolResult accepts, encoding/json reads without error.
func FuzzPlainToolResultReadsAsEncodingJSON(f *testing.F) {
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
		if !plainToolResult(raw) {
			return
		}
		if err := jsonToolResult(raw); err != nil {
			t.Fatalf("plainToolResult accepted %q, encoding/json: %v", raw, err)
		}
	})
}
