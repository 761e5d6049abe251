package safetext

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestEscape_HidesNothing(t *testing.T) {
	for in, want := range map[string]string{
		"plain text, ünïcode 日本":   "plain text, ünïcode 日本",
		"a\x1b[31mred\x1b[0m":      `a\u{001B}[31mred\u{001B}[0m`,
		"osc \x1b]8;;http://x\x07": `osc \u{001B}]8;;http://x\u{0007}`,
		"line\nbreak\ttab\\":       `line\nbreak\ttab\\`,
		"bidi \u202Eevil\u202C":    `bidi \u{202E}evil\u{202C}`,
		"isolate \u2066x\u2069":    `isolate \u{2066}x\u{2069}`,
		"zero\u200Bwidth\uFEFF":    `zero\u{200B}width\u{FEFF}`,
		"tag \U000E0041\U000E007F": `tag \u{E0041}\u{E007F}`,
		"combining e\u0301":        `combining e\u{0301}`,
		"c1 \u0085 \u009B":         `c1 \u{0085} \u{009B}`,
		"bad \xff utf8":            `bad \x{FF} utf8`,
		"cr\r":                     `cr\u{000D}`,
	} {
		if got := Escape(in); got != want {
			t.Errorf("Escape(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCut_HeadAndTailMarked(t *testing.T) {
	s := strings.Repeat("h", 500) + strings.Repeat("t", 500)
	got := Cut(s, 100)
	if len(got) > 110 || !strings.HasPrefix(got, "hhh") || !strings.HasSuffix(got, "ttt") || !strings.Contains(got, "bytes cut]") {
		t.Fatalf("Cut = %q", got)
	}
	if Cut("short", 100) != "short" {
		t.Fatal("short string changed")
	}
	u := strings.Repeat("日", 300)
	if c := Cut(u, 100); !utf8.ValidString(c) {
		t.Fatalf("Cut split a rune: %q", c)
	}
}

func FuzzEscape(f *testing.F) {
	f.Add("a\x1b[2Jb\u202e\U000E0041\xff")
	f.Fuzz(func(t *testing.T, s string) {
		out := Escape(s)
		if !utf8.ValidString(out) {
			t.Fatalf("escaped output is not valid UTF-8: %q", out)
		}
		for _, r := range out {
			if Suspicious(r) {
				t.Fatalf("escaped output still has %U: %q", r, out)
			}
		}
		if c := Show(s, 64); len(c) > 64+40 {
			t.Fatalf("Show not bounded: %d bytes", len(c))
		}
	})
}

// Everything printed through a Writer reaches the terminal escaped, even a
// sequence split between writes; plain and already escaped text passes as is.
func TestWriter_EscapesWhatPassesThrough(t *testing.T) {
	var out strings.Builder
	w := NewWriter(&out)
	hostile := "a\x1b]0;pwned\x07b\x1b[31mred\u0085\u009b\x7f\u202e\u200b\U000E0041e\u0301\tz\xff\n"
	for _, chunk := range []string{hostile[:3], hostile[3:17], hostile[17:19], hostile[19:20], hostile[20:], "日本"[:2], "日本"[2:], `\u{202E} ok` + "\n", "\xe6"} {
		if n, err := w.Write([]byte(chunk)); n != len(chunk) || err != nil {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	want := `a\u{001B}]0;pwned\u{0007}b\u{001B}[31mred\u{0085}\u{009B}\u{007F}\u{202E}\u{200B}\u{E0041}e\u{0301}\tz\x{FF}` + "\n" + `日本\u{202E} ok` + "\n" + `\x{E6}`
	if out.String() != want {
		t.Fatalf("through the writer:\n%q\nwant\n%q", out.String(), want)
	}
}

func FuzzWriter(f *testing.F) {
	f.Add([]byte("a\x1b[2Jb\u202e\U000E0041\xff"), uint8(3))
	f.Fuzz(func(t *testing.T, p []byte, split uint8) {
		var out strings.Builder
		w := NewWriter(&out)
		k := int(split) % (len(p) + 1)
		w.Write(p[:k])
		w.Write(p[k:])
		w.Flush()
		for _, r := range out.String() {
			if r != '\n' && Suspicious(r) {
				t.Fatalf("the writer let %U through: %q", r, out.String())
			}
		}
		if !utf8.ValidString(out.String()) {
			t.Fatalf("not UTF-8: %q", out.String())
		}
		var whole strings.Builder
		w2 := NewWriter(&whole)
		w2.Write(p)
		w2.Flush()
		if whole.String() != out.String() {
			t.Fatalf("split at %d: %q, whole: %q", k, out.String(), whole.String())
		}
	})
}
