package jsonl

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mcp-guard/mcp-guard/internal/safetext"
)

// rawSuspicious returns the first character of b safetext.Suspicious
// names, or -1.
func rawSuspicious(b []byte) rune {
	for _, r := range string(b) {
		if r == utf8.RuneError || safetext.Suspicious(r) {
			return r
		}
	}
	return -1
}

func TestMarshal_EscapesHiddenText(t *testing.T) {
	in := map[string]string{
		"bidi": "a\u202Eevil\u202C", "zw": "x\u200By\uFEFF", "tag": "t\U000E0041\U000E007F",
		"c0": "\x1b[31m\x07", "c1": "\u0085\u009B", "del": "\x7f", "plain": "日本 <&> \"q\" \\",
	}
	line, err := Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	if r := rawSuspicious(line); r != -1 {
		t.Fatalf("line has %U raw: %s", r, line)
	}
	for _, want := range []string{`\u202e`, `\u200b`, `\ufeff`, `\udb40\udc41`, `\u001b`, `\u0085`, `\u007f`, `<&>`} {
		if !bytes.Contains(line, []byte(want)) {
			t.Errorf("line lacks %s: %s", want, line)
		}
	}
	var back map[string]string
	if err := json.Unmarshal(line, &back); err != nil {
		t.Fatalf("not JSON: %v: %s", err, line)
	}
	for k, v := range in {
		if back[k] != v {
			t.Errorf("%s: decoded %q, want %q", k, back[k], v)
		}
	}
}

func TestWriter_OneObjectPerLine(t *testing.T) {
	var b bytes.Buffer
	w := NewWriter(&b)
	for _, s := range []string{"a\nb", "c\u2028d"} {
		if err := w.Write(map[string]string{"s": s}); err != nil {
			t.Fatal(err)
		}
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("want 2 lines, got %q", b.String())
	}
}

func FuzzMarshal(f *testing.F) {
	f.Add("a\x1b[2Jb\u202e\U000E0041\u200b\u0085")
	f.Add("\xff\xfe bad utf8 \\u202e")
	f.Fuzz(func(t *testing.T, s string) {
		line, err := Marshal(struct {
			S string   `json:"s"`
			L []string `json:"l"`
		}{s, []string{s, s + "x"}})
		if err != nil {
			t.Fatal(err)
		}
		if bytes.ContainsRune(line, '\n') || !json.Valid(line) {
			t.Fatalf("not one valid JSON line: %q", line)
		}
		if r := rawSuspicious(line); r != -1 {
			t.Fatalf("line has %U raw: %q", r, line)
		}
		var back struct {
			S string   `json:"s"`
			L []string `json:"l"`
		}
		if err := json.Unmarshal(line, &back); err != nil {
			t.Fatal(err)
		}
		if utf8.ValidString(s) && back.S != s { // invalid bytes decode as U+FFFD, as encoding/json writes them
			t.Fatalf("decoded %q, want %q", back.S, s)
		}
		if len(back.L) != 2 || back.L[0] != back.S {
			t.Fatalf("list decoded %q", back.L)
		}
	})
}
