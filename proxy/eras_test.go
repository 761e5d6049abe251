package proxy

import (
	"encoding/json"
	"testing"
)

// A 2026-07-28 result reaches a legacy host without resultType and its
// _meta's serverInfo, every other byte (spacing, order, other _meta keys)
// as the server wrote it.
func TestLegacyEnvelope(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"s","version":"1"}},"content":[],"resultType":"complete"}`, `{"content":[]}`},
		{`{"resultType":"complete", "content":[{"type":"text","text":"a"}] ,"isError":true}`, `{"content":[{"type":"text","text":"a"}] ,"isError":true}`},
		{`{"content":[],"_meta":{"k":1,"io.modelcontextprotocol/serverInfo":{"name":"s"}},"resultType":"complete"}`, `{"content":[],"_meta":{"k":1}}`},
		{`{"_meta":{"io.modelcontextprotocol/serverInfo":{},"z":[1]} , "content":[]}`, `{"_meta":{"z":[1]} , "content":[]}`},
		{`{"content":[],"_meta":{"k":1}}`, `{"content":[],"_meta":{"k":1}}`},
		{`{"content":[]}`, `{"content":[]}`},
		{`{"resultType":"complete"}`, `{}`},
	} {
		got := legacyEnvelope(json.RawMessage(c.in))
		if string(got) != c.want {
			t.Errorf("legacyEnvelope(%s)\n got %s\nwant %s", c.in, got, c.want)
		}
		if !json.Valid(got) {
			t.Errorf("legacyEnvelope(%s) is not JSON: %s", c.in, got)
		}
	}
}

func TestRemoveMember(t *testing.T) {
	for _, c := range []struct{ in, name, want string }{
		{`{"a":1,"b":2,"c":3}`, "a", `{"b":2,"c":3}`},
		{`{"a":1,"b":2,"c":3}`, "b", `{"a":1,"c":3}`},
		{`{"a":1,"b":2,"c":3}`, "c", `{"a":1,"b":2}`},
		{`{ "a" : 1 , "b":2 }`, "a", `{"b":2 }`},
		{`{"a":1,"a":2,"b":3}`, "a", `{"b":3}`},
		{`{"a":{"b":1}}`, "b", `{"a":{"b":1}}`},
		{`[1]`, "a", `[1]`},
	} {
		if got := removeMember([]byte(c.in), c.name); string(got) != c.want {
			t.Errorf("removeMember(%s, %q) = %s, want %s", c.in, c.name, got, c.want)
		}
	}
}
