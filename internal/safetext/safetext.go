package safetext

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Escape returns s with every character that is not plainly visible text
// replaced by a visible escape: \n, \t, \\ and \u{XXXX} for the rest
// (controls, bidi controls, zero-width and format characters, tag
// characters, combining marks, unassigned and private-use code points).
// Invalid UTF-8 bytes are shown as \x{XX}. The result is one line.
func Escape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			fmt.Fprintf(&b, `\x{%02X}`, s[i])
			i++
			continue
		}
		i += size
		switch {
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\\':
			b.WriteString(`\\`)
		case Suspicious(r):
			fmt.Fprintf(&b, `\u{%04X}`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Suspicious reports whether r can hide, move or reorder text on a
// terminal, or is not assigned visible text: it must be shown escaped.
func Suspicious(r rune) bool {
	switch {
	case r < 0x20, r == 0x7F, r >= 0x80 && r <= 0x9F: // C0, DEL, C1
		return true
	case r >= 0x200B && r <= 0x200F, // zero-width space/joiners, LRM, RLM
		r >= 0x202A && r <= 0x202E,   // bidi embeddings and overrides
		r >= 0x2060 && r <= 0x206F,   // word joiner, invisible operators, bidi isolates
		r == 0xFEFF,                  // zero-width no-break space (BOM)
		r == 0x061C,                  // Arabic letter mark
		r == 0x180E,                  // Mongolian vowel separator
		r == 0x00AD,                  // soft hyphen
		r >= 0xE0000 && r <= 0xE007F, // tag characters
		r >= 0xFFF9 && r <= 0xFFFB:   // interlinear annotation
		return true
	case unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf, unicode.Co, unicode.Cs):
		return true
	case !unicode.IsPrint(r) && r != ' ':
		return true
	}
	return false
}

// Cut bounds s to about max bytes, keeping its head and tail and marking the
// cut with how many bytes were left out. It never splits a UTF-8 sequence.
func Cut(s string, max int) string {
	if len(s) <= max || max < 32 {
		return s
	}
	keep := max - 24
	head, tail := keep*2/3, keep/3
	for head > 0 && !utf8.RuneStart(s[head]) {
		head--
	}
	start := len(s) - tail
	for start < len(s) && !utf8.RuneStart(s[start]) {
		start++
	}
	return fmt.Sprintf("%s…[%d bytes cut]…%s", s[:head], start-head, s[start:])
}

// Show escapes s and bounds the escaped result to max bytes.
func Show(s string, max int) string {
	return Cut(Escape(s), max)
}
