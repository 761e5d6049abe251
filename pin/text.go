package pin

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mcp-guard/mcp-guard/internal/safetext"
)

// Kinds of TextProblem.
const (
	KindControl     = "C0/C1 control"
	KindEscape      = "ANSI/OSC escape"
	KindBidi        = "bidi control"
	KindZeroWidth   = "zero-width"
	KindTag         = "tag character"
	KindInvalidUTF8 = "invalid UTF-8"
)

// MaxTextProblems caps what CheckText returns.
const MaxTextProblems = 20

// TextProblem is one offending character in a tool's text.
type TextProblem struct {
	// Where names the text: "title", "description",
	// "inputSchema/properties/path/description" for a string value, or
	// "inputSchema/properties/<key>" for a member name. Names in it are
	// escaped for display (safetext.Escape, with "/" in a name as "~1"
	// and "~" as "~0").
	Where string
	// Rune is the offending code point. For KindInvalidUTF8 it is the
	// offending byte (below 0x100) or an unpaired surrogate escape such
	// as \ud800 (0xD800-0xDFFF).
	Rune rune
	Kind string
}

// CheckText checks the tool's title and description, and every string —
// values and member names — in its inputSchema, outputSchema and
// annotations, for characters that can hide, move or reorder text on a
// terminal or smuggle text past a reader: ESC (KindEscape); other C0
// controls except \n and \t, DEL and C1 controls (KindControl); bidi
// embeddings, overrides, isolates and marks (KindBidi); zero-width and
// other invisible characters (KindZeroWidth); Unicode tag characters
// (KindTag); and invalid UTF-8 or unpaired surrogate escapes
// (KindInvalidUTF8). Title and description are read from t.Raw when it is
// set, so bytes a JSON decoder would have replaced are still seen.
//
// Ordinary multilingual text passes: accents and combining marks, CJK,
// emoji, newlines and tabs; also the joiners real text needs — U+200D
// between two emoji (👩‍💻), U+200C/U+200D between two letters of scripts
// that use them (Persian, Arabic, Indic scripts…), and the tag sequences
// of the three standard subdivision flags (England, Scotland, Wales).
//
// It returns at most MaxTextProblems problems, in a stable order: title,
// description, inputSchema, outputSchema, annotations, each in document
// order.
func CheckText(t Tool) []TextProblem {
	sc := &textScan{}
	var title, desc [][]unit
	if len(t.Raw) > 0 {
		walkJSON(t.Raw, func(path []string, isKey bool, u []unit) {
			if isKey || len(path) != 1 {
				return
			}
			switch path[0] {
			case "title":
				title = append(title, append([]unit(nil), u...))
			case "description":
				desc = append(desc, append([]unit(nil), u...))
			}
		})
	} else {
		if t.Title != "" {
			title = [][]unit{stringUnits(t.Title)}
		}
		if t.Description != "" {
			desc = [][]unit{stringUnits(t.Description)}
		}
	}
	for _, u := range title {
		sc.check(func() string { return "title" }, u)
	}
	for _, u := range desc {
		sc.check(func() string { return "description" }, u)
	}
	for _, part := range []struct {
		name string
		raw  []byte
	}{{"inputSchema", t.InputSchema}, {"outputSchema", t.OutputSchema}, {"annotations", t.Annotations}} {
		if sc.full() {
			break
		}
		walkJSON(part.raw, func(path []string, _ bool, u []unit) {
			if sc.full() {
				return
			}
			sc.check(func() string { return wherePath(part.name, path) }, u)
		})
	}
	return sc.probs
}

func wherePath(root string, path []string) string {
	var b strings.Builder
	b.WriteString(root)
	for _, p := range path {
		b.WriteByte('/')
		b.WriteString(safetext.Escape(strings.ReplaceAll(strings.ReplaceAll(p, "~", "~0"), "/", "~1")))
	}
	return b.String()
}

// DescribeProblems returns one line naming the problems with their code
// points, grouped by where they are, e.g. `description has U+202E (bidi
// control), U+E0041 (tag character); title has U+001B (ANSI/OSC escape)`.
// A character repeated in one place is listed once with a count.
func DescribeProblems(ps []TextProblem) string {
	type item struct {
		r    rune
		kind string
		n    int
	}
	var wheres []string
	groups := map[string][]item{}
	for _, p := range ps {
		items, ok := groups[p.Where]
		if !ok {
			wheres = append(wheres, p.Where)
		}
		found := false
		for i := range items {
			if items[i].r == p.Rune && items[i].kind == p.Kind {
				items[i].n++
				found = true
				break
			}
		}
		if !found {
			items = append(items, item{p.Rune, p.Kind, 1})
		}
		groups[p.Where] = items
	}
	var b strings.Builder
	for i, w := range wheres {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(oneLine(w)) // CheckText escaped it already; this guards hand-made problems
		b.WriteString(" has ")
		for j, it := range groups[w] {
			if j > 0 {
				b.WriteString(", ")
			}
			if it.kind == KindInvalidUTF8 && it.r < 0x100 {
				fmt.Fprintf(&b, "byte 0x%02X", it.r)
			} else {
				fmt.Fprintf(&b, "U+%04X", it.r)
			}
			b.WriteString(" (")
			b.WriteString(oneLine(it.kind))
			b.WriteString(")")
			if it.n > 1 {
				fmt.Fprintf(&b, " ×%d", it.n)
			}
		}
	}
	return b.String()
}

// unit is one decoded character of a JSON string, or one bad byte or
// unpaired surrogate escape (bad set, r holding the byte or surrogate).
type unit struct {
	r   rune
	bad bool
}

func stringUnits(s string) []unit {
	var us []unit
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			us = append(us, unit{rune(s[i]), true})
		} else {
			us = append(us, unit{r: r})
		}
		i += n
	}
	return us
}

type textScan struct {
	probs []TextProblem
}

func (sc *textScan) full() bool { return len(sc.probs) >= MaxTextProblems }

func (sc *textScan) add(where string, r rune, kind string) {
	if !sc.full() {
		sc.probs = append(sc.probs, TextProblem{Where: where, Rune: r, Kind: kind})
	}
}

// check reports the offending characters of one string. where is only
// called when there is one (building it costs the depth of the string).
func (sc *textScan) check(whereFn func() string, us []unit) {
	where := ""
	add := func(r rune, kind string) {
		if where == "" {
			where = whereFn()
		}
		sc.add(where, r, kind)
	}
	for i := 0; i < len(us) && !sc.full(); i++ {
		u := us[i]
		if u.bad {
			add(u.r, KindInvalidUTF8)
			continue
		}
		kind := textKind(u.r)
		if kind == "" {
			continue
		}
		if (u.r == 0x200C || u.r == 0x200D) && joinerAllowed(us, i) {
			continue
		}
		if kind == KindTag && flagTagAt(us, i) {
			continue
		}
		add(u.r, kind)
	}
}

// textKind classifies r, or returns "" for ordinary text.
func textKind(r rune) string {
	switch {
	case r == 0x1B:
		return KindEscape
	case r == '\n' || r == '\t':
		return ""
	case r < 0x20 || r == 0x7F || (r >= 0x80 && r <= 0x9F):
		return KindControl
	case r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069,
		r == 0x200E, r == 0x200F, r == 0x061C:
		return KindBidi
	case r == 0x200B, r == 0x200C, r == 0x200D, r == 0x2060, r == 0xFEFF, r == 0x180E,
		r >= 0x2061 && r <= 0x2064, // invisible operators
		r >= 0x206A && r <= 0x206F, // deprecated invisible format characters
		r >= 0xFFF9 && r <= 0xFFFB: // interlinear annotation (hides the annotated text)
		return KindZeroWidth
	case r >= 0xE0000 && r <= 0xE007F:
		return KindTag
	}
	return ""
}

// joinerAllowed reports whether the ZWJ/ZWNJ at us[i] sits where real text
// needs it: ZWJ between two emoji, or either joiner between two letters
// (or marks) of a script that uses joiners. A run of joiners never is.
func joinerAllowed(us []unit, i int) bool {
	if i == 0 || i+1 >= len(us) || us[i-1].bad || us[i+1].bad {
		return false
	}
	prev, next := us[i-1].r, us[i+1].r
	if us[i].r == 0x200D && (isEmoji(prev) || prev == 0xFE0F) && isEmoji(next) {
		return true
	}
	return joiningScript(prev) && joiningScript(next)
}

func isEmoji(r rune) bool {
	return r >= 0x1F000 && r <= 0x1FAFF || r >= 0x2600 && r <= 0x27BF ||
		r >= 0x2300 && r <= 0x23FF || r >= 0x2B00 && r <= 0x2BFF
}

var joinerScripts = []*unicode.RangeTable{
	unicode.Arabic, unicode.Syriac, unicode.Nko, unicode.Mongolian,
	unicode.Devanagari, unicode.Bengali, unicode.Gurmukhi, unicode.Gujarati,
	unicode.Oriya, unicode.Tamil, unicode.Telugu, unicode.Kannada,
	unicode.Malayalam, unicode.Sinhala, unicode.Myanmar, unicode.Khmer,
}

func joiningScript(r rune) bool {
	if !unicode.IsLetter(r) && !unicode.Is(unicode.M, r) {
		return false
	}
	return unicode.IsOneOf(joinerScripts, r)
}

// flagTagAt reports whether the tag character at us[i] belongs to one of
// the three standard subdivision flags: U+1F3F4, tags spelling gbeng,
// gbsct or gbwls, U+E007F. Anything else in tags (ASCII smuggling) is
// reported.
func flagTagAt(us []unit, i int) bool {
	start := i
	for start > 0 && us[start-1].r >= 0xE0000 && us[start-1].r <= 0xE007F && !us[start-1].bad {
		start--
	}
	if start == 0 || us[start-1].r != 0x1F3F4 || us[start-1].bad {
		return false
	}
	var b strings.Builder
	j := start
	for ; j < len(us) && !us[j].bad && us[j].r >= 0xE0020 && us[j].r <= 0xE007E; j++ {
		b.WriteRune(us[j].r - 0xE0000)
	}
	if j >= len(us) || us[j].r != 0xE007F || us[j].bad || i > j {
		return false
	}
	switch b.String() {
	case "gbeng", "gbsct", "gbwls":
		return true
	}
	return false
}

// walkJSON calls visit for every string in raw, a JSON value, with its
// path (member names and array indices) and whether it is a member name
// (then the path ends with that name). It decodes escapes itself and
// keeps invalid UTF-8 and unpaired surrogates as bad units. It never fails:
// malformed input is walked as far as it makes sense. It uses no recursion.
func walkJSON(raw []byte, visit func(path []string, isKey bool, u []unit)) {
	type frame struct {
		obj, wantKey bool
		index        int
	}
	var stack []frame
	var path []string // path[k] is the token of stack[k]: its current key or index
	var buf []unit
	for i := 0; i < len(raw); {
		switch c := raw[i]; c {
		case '{', '[':
			stack = append(stack, frame{obj: c == '{', wantKey: c == '{'})
			if c == '{' {
				path = append(path, "")
			} else {
				path = append(path, "0")
			}
			i++
		case '}', ']':
			if len(stack) > 0 {
				stack, path = stack[:len(stack)-1], path[:len(path)-1]
			}
			i++
		case ',':
			if n := len(stack); n > 0 {
				if stack[n-1].obj {
					stack[n-1].wantKey = true
				} else {
					stack[n-1].index++
					path[n-1] = strconv.Itoa(stack[n-1].index)
				}
			}
			i++
		case '"':
			buf, i = readJSONString(raw, i, buf[:0])
			if n := len(stack); n > 0 && stack[n-1].obj && stack[n-1].wantKey {
				stack[n-1].wantKey = false
				path[n-1] = unitsString(buf)
				visit(path, true, buf)
			} else {
				visit(path, false, buf)
			}
		default:
			i++ // whitespace, ':', numbers, literals, and junk
		}
	}
}

// readJSONString decodes the JSON string starting at raw[i] == '"' into
// us, returning it and the index after the closing quote (or len(raw)).
func readJSONString(raw []byte, i int, us []unit) ([]unit, int) {
	i++
	for i < len(raw) {
		c := raw[i]
		switch {
		case c == '"':
			return us, i + 1
		case c == '\\':
			if i+1 >= len(raw) {
				return us, len(raw)
			}
			e := raw[i+1]
			i += 2
			switch e {
			case 'b':
				us = append(us, unit{r: '\b'})
			case 'f':
				us = append(us, unit{r: '\f'})
			case 'n':
				us = append(us, unit{r: '\n'})
			case 'r':
				us = append(us, unit{r: '\r'})
			case 't':
				us = append(us, unit{r: '\t'})
			case 'u':
				r, ok := hexRune(raw, i)
				if !ok {
					us = append(us, unit{r: 'u'})
					continue
				}
				i += 4
				if r >= 0xD800 && r <= 0xDBFF {
					if i+1 < len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
						if lo, ok := hexRune(raw, i+2); ok && lo >= 0xDC00 && lo <= 0xDFFF {
							us = append(us, unit{r: 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00)})
							i += 6
							continue
						}
					}
					us = append(us, unit{r: r, bad: true})
				} else if r >= 0xDC00 && r <= 0xDFFF {
					us = append(us, unit{r: r, bad: true})
				} else {
					us = append(us, unit{r: r})
				}
			default: // \" \\ \/ and invalid escapes alike
				us = append(us, unit{r: rune(e)})
			}
		default:
			r, n := utf8.DecodeRune(raw[i:])
			if r == utf8.RuneError && n == 1 {
				us = append(us, unit{r: rune(c), bad: true})
			} else {
				us = append(us, unit{r: r})
			}
			i += n
		}
	}
	return us, i
}

func hexRune(raw []byte, i int) (rune, bool) {
	if i+4 > len(raw) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(raw[i:i+4]), 16, 32)
	if err != nil {
		return 0, false
	}
	return rune(v), true
}

func unitsString(us []unit) string {
	var b strings.Builder
	for _, u := range us {
		switch {
		case u.bad && u.r < 0x100:
			b.WriteByte(byte(u.r)) // shown as \x{XX} by safetext.Escape
		case u.bad:
			b.WriteRune(utf8.RuneError)
		default:
			b.WriteRune(u.r)
		}
	}
	return b.String()
}
