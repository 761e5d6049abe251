package proxy

import (
	"encoding/json"
	"strings"
	"testing"
)

// A log message's data keeps the server's member order and numbers; only
// its strings, member names too, are escaped and cut.
func TestSanitizeJSON(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"z":1,"a":"x","n":12345678901234567890}`, `{"z":1,"a":"x","n":12345678901234567890}`},
		{`{"k\u001b":["v\u202e",{"b":true,"a":null}]}`, `{"k\\u{001B}":["v\\u{202E}",{"b":true,"a":null}]}`},
		{`"top\u0007"`, `"top\\u{0007}"`},
		{``, `null`},
	} {
		got, err := sanitizeJSON(json.RawMessage(c.in))
		if err != nil || string(got) != c.want {
			t.Errorf("sanitizeJSON(%s) = %s %v; want %s", c.in, got, err, c.want)
		}
	}
	long := `{"` + strings.Repeat("n", 300) + `":"` + strings.Repeat("v", 5000) + `"}`
	got, err := sanitizeJSON(json.RawMessage(long))
	var m map[string]string
	if err != nil || json.Unmarshal(got, &m) != nil || len(m) != 1 {
		t.Fatalf("long: %v", err)
	}
	for k, v := range m {
		if len(k) > 300 || len(v) > logTextMax+8 {
			t.Fatalf("long name %d and value %d not cut", len(k), len(v))
		}
	}
	if _, err := sanitizeJSON(json.RawMessage(`{"a":`)); err == nil {
		t.Fatal("truncated data accepted")
	}
}
