package upstream

import (
	"bytes"
	"encoding/json"
	"testing"
)

// encoderString is s as the encoder writes it, without HTML escaping.
func encoderString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.Encode(s)
	return string(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
}

// The strings written and read without encoding/json are written and read
// as it writes and reads them; the rest are left to it.
func TestJSONString_PlainAgreesWithEncoding(t *testing.T) {
	for _, s := range []string{"", "17", "tools/call", "a b~", "<&>", "é", "a\"b", "a\\b", "\n", "\u2028", "\x7f", "\xff"} {
		if got, want := string(jsonString(s)), encoderString(s); got != want {
			t.Errorf("jsonString(%q) = %s, want %s", s, got, want)
		}
	}
	for raw, want := range map[string]bool{`"17"`: true, `""`: true, `"é"`: true, `"a\"b"`: false, `"\u0031"`: false, "\"\x01\"": false, "\"\xff\"": false, `17`: false, `"`: false} {
		v, ok := unescapedString([]byte(raw))
		if ok != want {
			t.Errorf("unescapedString(%s) ok = %v, want %v", raw, ok, want)
			continue
		}
		var dec string
		if ok && (json.Unmarshal([]byte(raw), &dec) != nil || dec != v) {
			t.Errorf("unescapedString(%s) = %q, encoding/json reads %q", raw, v, dec)
		}
	}
}

func FuzzJSONString(f *testing.F) {
	for _, s := range []string{"17", "é", "a\"b", "\u2028", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := string(jsonString(s)), encoderString(s); got != want {
			t.Fatalf("jsonString(%q) = %s, want %s", s, got, want)
		}
		if v, ok := unescapedString([]byte(s)); ok {
			var dec string
			if json.Unmarshal([]byte(s), &dec) != nil || dec != v {
				t.Fatalf("unescapedString(%q) = %q, encoding/json reads %q", s, v, dec)
			}
		}
	})
}
