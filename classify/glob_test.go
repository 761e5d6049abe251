package classify

import (
	"errors"
	"strings"
	"testing"
)

func TestGlobMatch(t *testing.T) {
	tests := []struct {
		pat, s string
		want   bool
	}{
		{"*", "", true},
		{"*", "anything/with/slashes", true},
		{"read_*", "read_file", true},
		{"read_*", "read_", true},
		{"read_*", "write_file", false},
		{"read_*", "xread_file", false},
		{"*_file", "read_file", true},
		{"*_file", "read_file2", false},
		{"a*b*c", "abc", true},
		{"a*b*c", "aXXbYYc", true},
		{"a*b*c", "aXXbYYcd", false},
		{"a*b*c", "acb", false},
		{"*a*a*a*b", strings.Repeat("a", 100), false},
		{"*a*a*a*b", strings.Repeat("a", 100) + "b", true},
		{"?", "é", true},
		{"?", "", false},
		{"?", "ab", false},
		{"a?c", "abc", true},
		{"a?c", "a/c", true}, // '?' crosses '/', unlike path.Match
		{"[abc]", "b", true},
		{"[abc]", "d", false},
		{"[a-c]x", "bx", true},
		{"[a-c]x", "dx", false},
		{"[^a-c]", "d", true},
		{"[^a-c]", "a", false},
		{"[^a-c]", "", false},
		{"[!]", "!", false}, // refused at compile; see TestGlobSyntax
		{`[\!a]`, "!", true},
		{`[\]]`, "]", true},
		{`[\-]`, "-", true},
		{"[[]", "[", true},
		{"a]", "a]", true},
		{`\*`, "*", true},
		{`\*`, "x", false},
		{`a\?`, "a?", true},
		{`a\?`, "ab", false},
		{`\\`, `\`, true},
		{"read_file", "read_file", true},
		{"read_file", "read_file ", false},
		{"", "", true},
		{"", "a", false},
	}
	for _, tt := range tests {
		g, err := compileGlob(tt.pat)
		if err != nil {
			if tt.pat == "[!]" {
				continue
			}
			t.Errorf("compileGlob(%q): %v", tt.pat, err)
			continue
		}
		if got := g.match(tt.s); got != tt.want {
			t.Errorf("glob %q match %q = %v, want %v", tt.pat, tt.s, got, tt.want)
		}
	}
}

func TestGlobSyntax(t *testing.T) {
	bad := []struct{ pat, detail string }{
		{"read_[*", ""},
		{"[", ""},
		{"[]", ""},
		{"[]a]", ""},
		{"[-a]", ""},
		{"[a-]", ""},
		{"[^]", ""},
		{`\`, ""},
		{`a[\`, ""},
		{"[a", ""},
		{"[a-b", ""},
		{"[!a]", `"[!" is ambiguous`},
		{"[z-a]", "reversed range"},
		{"\xff", "not valid UTF-8"},
	}
	for _, tt := range bad {
		_, err := compileGlob(tt.pat)
		if err == nil {
			t.Errorf("compileGlob(%q) = nil error", tt.pat)
			continue
		}
		if !errors.Is(err, errBadPattern) || !strings.Contains(err.Error(), tt.detail) {
			t.Errorf("compileGlob(%q) = %v, want errBadPattern containing %q", tt.pat, err, tt.detail)
		}
	}
	for _, p := range []string{"*", "a*b", "[^!]", "x[a-z0-9_]", `\[`, "[a!]"} {
		if _, err := compileGlob(p); err != nil {
			t.Errorf("compileGlob(%q): %v", p, err)
		}
	}
}

func TestGlobCovers(t *testing.T) {
	tests := []struct {
		g, h string
		want bool
	}{
		{"*", "anything*", true},
		{"**", "x", true},
		{"read_*", "read_*", true},
		{"read_*", "read_file", true},
		{"read_*", "write_file", false},
		{"read_*", "read_f*", false}, // true in fact, but not provable by the cheap test
		{"fs", "f*", false},
		{`a\*`, "a*", false},
	}
	for _, tt := range tests {
		g, _ := compileGlob(tt.g)
		h, _ := compileGlob(tt.h)
		if got := g.covers(h); got != tt.want {
			t.Errorf("%q covers %q = %v, want %v", tt.g, tt.h, got, tt.want)
		}
	}
}
