package proxy

import (
	"encoding/json"
	"testing"
)

// A member's value is replaced in place: every other byte, whitespace,
// order, escapes and gate.Duplicates included, stays the server's.
func TestReplaceMember(t *testing.T) {
	for _, c := range []struct{ in, name, value, want string }{
		{`{"a":1,"name":"x","z":"<"}`, "name", `"db__x"`, `{"a":1,"name":"db__x","z":"<"}`},
		{`{ "name" : "x" , "nested":{"name":"y"}}`, "name", `"db__x"`, `{ "name" : "db__x" , "nested":{"name":"y"}}`},
		{`{"nested":{"name":"y"},"name":"\u0078"}`, "name", `"n"`, `{"nested":{"name":"y"},"name":"n"}`},
		{`{"list":[{"name":1}],"uri":"file:///a"}`, "uri", `"mcp-guard://s/file:///a"`, `{"list":[{"name":1}],"uri":"mcp-guard://s/file:///a"}`},
	} {
		got, ok := replaceMember([]byte(c.in), c.name, []byte(c.value))
		if !ok || string(got) != c.want {
			t.Errorf("replaceMember(%s, %s) = %s %v; want %s", c.in, c.name, got, ok, c.want)
		}
	}
	for _, bad := range []string{`{"nested":{"name":"y"}}`, `[{"name":1}]`, `"name"`, `{"name":`} {
		if got, ok := replaceMember([]byte(bad), "name", []byte(`1`)); ok {
			t.Errorf("replaceMember(%s) = %s; want no member", bad, got)
		}
	}
	for _, c := range []struct{ in, want string }{
		{`{"values":[]}`, `{"values":[],"hasMore":true}`},
		{`{"hasMore":false,"values":[]}`, `{"hasMore":true,"values":[]}`},
		{`{ }`, `{ "hasMore":true}`},
	} {
		if got, ok := setMember([]byte(c.in), "hasMore", []byte("true")); !ok || string(got) != c.want {
			t.Errorf("setMember(%s) = %s; want %s", c.in, got, c.want)
		}
	}
}

// A completion reaches the host as the server sent it; only values that
// escaping changes, or past 100, are rewritten, and then hasMore is true.
func TestHostCompletion(t *testing.T) {
	same := `{"completion":{"values":["b","a <x>"],"hasMore":false,"total":2},"_meta":{"z":1}}`
	if got, err := hostCompletion(json.RawMessage(same)); err != nil || string(got) != same {
		t.Fatalf("hostCompletion(%s) = %s %v; want it unchanged", same, got, err)
	}
	esc := `{"completion":{"total":2,"values":["ok","bad\u001b[2J"]}}`
	got, err := hostCompletion(json.RawMessage(esc))
	if err != nil || string(got) != `{"completion":{"total":2,"values":["ok","bad\\u{001B}[2J"]}}` {
		t.Fatalf("hostCompletion(%s) = %s %v", esc, got, err)
	}
	vals := `"v"`
	for range 120 {
		vals += `,"v"`
	}
	many := `{"completion":{"values":[` + vals + `]}}`
	got, err = hostCompletion(json.RawMessage(many))
	var c struct {
		Completion struct {
			Values  []string `json:"values"`
			HasMore bool     `json:"hasMore"`
		} `json:"completion"`
	}
	if err != nil || json.Unmarshal(got, &c) != nil || len(c.Completion.Values) != 100 || !c.Completion.HasMore {
		t.Fatalf("121 values: %d values, hasMore %v, %v", len(c.Completion.Values), c.Completion.HasMore, err)
	}
	for _, bad := range []string{`{}`, `{"completion":{}}`, `{"completion":{"values":[1]}}`} {
		if _, err := hostCompletion(json.RawMessage(bad)); err == nil {
			t.Errorf("hostCompletion(%s) accepted", bad)
		}
	}
}
