package pin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/mcp-guard/mcp-guard/internal/safetext"
)

// Diff bounds and layout.
const (
	// MaxDiffLines caps the changed region compared on each side.
	MaxDiffLines = 2000
	diffContext  = 3
	hintWindow   = 24 // bytes shown either side of the first difference
)

// Diff messages.
const (
	diffSame       = "no change: the bytes are identical"
	diffWhitespace = "only whitespace between tokens changed; the bytes differ, so the pin does"
	diffNotJSON    = "not valid JSON on one side: compared line by line as sent"
)

// Diff returns a readable line diff of two tool definitions (raw bytes as
// sent). Each side is pretty-printed with json.Indent (2 spaces; member
// order and number spelling kept, nothing sorted), then compared line by
// line (LCS) and shown with "- ", "+ " and "  " prefixes and 3 lines of
// context, skipped lines marked "…".
//
// Every line is escaped for a terminal: controls, ESC, bidi, zero-width,
// tag and other invisible characters are shown as \u{XXXX} and invalid
// UTF-8 as \x{XX}. Backslashes are left as they are: JSON text never holds
// "\u{", so the escapes cannot be confused with the JSON's own, and a
// description's "\n" stays readable. (Input that is not JSON is shown
// with safetext.Escape, which doubles backslashes.)
//
// When the two differ only in whitespace between tokens, the first line
// says so, followed by the first differing byte offset and the bytes
// around it (spaces as ␠, other whitespace as \u{XXXX}).
//
// When old is empty (a definition never accepted), new is shown whole,
// every line an addition.
//
// Common leading and trailing lines are skipped cheaply; the changed
// region between them is compared up to MaxDiffLines lines a side, and a
// cut is said.
func Diff(old, new []byte) string {
	if bytes.Equal(old, new) {
		return diffSame + "\n"
	}
	var b strings.Builder
	var co, cn bytes.Buffer
	if json.Compact(&co, old) == nil && json.Compact(&cn, new) == nil && bytes.Equal(co.Bytes(), cn.Bytes()) {
		b.WriteString(diffWhitespace + "\n")
		writeByteHint(&b, old, new)
		return b.String()
	}
	ol, okOld := prettyLines(old)
	if len(old) == 0 {
		// Nothing was ever accepted: the new definition is shown whole,
		// every line an addition.
		ol, okOld = nil, true
	}
	nl, okNew := prettyLines(new)
	esc := oneLine
	if !okOld || !okNew {
		b.WriteString(diffNotJSON + "\n")
		esc = safetext.Escape
	}
	if !writeLineDiff(&b, ol, nl, esc) {
		// Same lines, different bytes (only possible for non-JSON input,
		// e.g. a trailing newline): show where.
		b.WriteString("the lines are the same but the bytes differ\n")
		writeByteHint(&b, old, new)
	}
	return b.String()
}

// prettyLines indents raw JSON and splits it into lines; for input that
// is not JSON it splits raw as is and reports false.
func prettyLines(raw []byte) ([]string, bool) {
	var buf bytes.Buffer
	if err := json.Indent(&buf, raw, "", "  "); err != nil {
		return strings.Split(strings.TrimRight(string(raw), "\n"), "\n"), false
	}
	return strings.Split(strings.TrimRight(buf.String(), " \t\r\n"), "\n"), true
}

// writeByteHint shows where two byte strings first differ.
func writeByteHint(b *strings.Builder, old, new []byte) {
	k := 0
	for k < len(old) && k < len(new) && old[k] == new[k] {
		k++
	}
	fmt.Fprintf(b, "first difference at byte %d, marked ⟦ (old %d bytes, new %d bytes):\n", k, len(old), len(new))
	fmt.Fprintf(b, "  old: %s\n", hintWindowAt(old, k))
	fmt.Fprintf(b, "  new: %s\n", hintWindowAt(new, k))
}

// hintWindowAt shows the bytes of s around offset k, with whitespace made
// visible and the cut ends marked.
func hintWindowAt(s []byte, k int) string {
	from, to := k-hintWindow, k+hintWindow
	if from < 0 {
		from = 0
	}
	if to > len(s) {
		to = len(s)
	}
	for from > 0 && !utf8.RuneStart(s[from]) {
		from--
	}
	for to < len(s) && !utf8.RuneStart(s[to]) {
		to++
	}
	var b strings.Builder
	if from > 0 {
		b.WriteString("…")
	}
	b.WriteString(showWhitespace(s[from:k]))
	b.WriteString("⟦") // marks the first differing byte
	b.WriteString(showWhitespace(s[k:to]))
	if to < len(s) {
		b.WriteString("…")
	}
	return b.String()
}

// showWhitespace escapes s like oneLine, but shows a space as ␠ and
// newline, tab and carriage return as \u{XXXX}.
func showWhitespace(s []byte) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRune(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x{%02X}`, s[i])
		case r == ' ':
			b.WriteString("␠")
		case r == '\n' || r == '\t' || r == '\r' || safetext.Suspicious(r):
			fmt.Fprintf(&b, `\u{%04X}`, r)
		default:
			b.Write(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

type diffOp struct {
	kind byte // ' ', '-', '+', or '!' for a note
	text string
}

// writeLineDiff writes the hunks and reports whether there were any.
func writeLineDiff(b *strings.Builder, ol, nl []string, esc func(string) string) bool {
	// Common prefix and suffix, cheaply.
	p := 0
	for p < len(ol) && p < len(nl) && ol[p] == nl[p] {
		p++
	}
	s := 0
	for s < len(ol)-p && s < len(nl)-p && ol[len(ol)-1-s] == nl[len(nl)-1-s] {
		s++
	}
	a, c := ol[p:len(ol)-s], nl[p:len(nl)-s]
	var cutA, cutC int
	if len(a) > MaxDiffLines {
		a, cutA = a[:MaxDiffLines], len(a)-MaxDiffLines
	}
	if len(c) > MaxDiffLines {
		c, cutC = c[:MaxDiffLines], len(c)-MaxDiffLines
	}

	var ops []diffOp
	for _, l := range ol[:p] {
		ops = append(ops, diffOp{' ', l})
	}
	ops = append(ops, lcsOps(a, c)...)
	if cutA > 0 || cutC > 0 {
		ops = append(ops, diffOp{'!', fmt.Sprintf("[diff cut: the changed region is over %d lines; %d more old and %d more new lines not compared]", MaxDiffLines, cutA, cutC)})
	}
	for _, l := range ol[len(ol)-s:] {
		ops = append(ops, diffOp{' ', l})
	}

	show := make([]bool, len(ops))
	changed := false
	for i, op := range ops {
		if op.kind != ' ' {
			changed = true
			for j := max(0, i-diffContext); j <= min(len(ops)-1, i+diffContext); j++ {
				show[j] = true
			}
		}
	}
	gap := false
	for i, op := range ops {
		if !show[i] {
			gap = true
			continue
		}
		if gap {
			b.WriteString("…\n")
			gap = false
		}
		if op.kind == '!' {
			b.WriteString(op.text)
		} else {
			b.WriteByte(op.kind)
			b.WriteByte(' ')
			b.WriteString(esc(op.text))
		}
		b.WriteByte('\n')
	}
	if !changed {
		return false
	}
	if gap {
		b.WriteString("…\n")
	}
	return true
}

// lcsOps is a longest-common-subsequence line diff of a and c (each at
// most MaxDiffLines lines, so the table is at most 4M small cells).
func lcsOps(a, c []string) []diffOp {
	n, m := len(a), len(c)
	w := m + 1
	t := make([]uint16, (n+1)*w) // t[i*w+j]: LCS length of a[i:], c[j:]
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			switch {
			case a[i] == c[j]:
				t[i*w+j] = t[(i+1)*w+j+1] + 1
			case t[(i+1)*w+j] >= t[i*w+j+1]:
				t[i*w+j] = t[(i+1)*w+j]
			default:
				t[i*w+j] = t[i*w+j+1]
			}
		}
	}
	var ops []diffOp
	i, j := 0, 0
	for i < n && j < m {
		switch {
		case a[i] == c[j]:
			ops = append(ops, diffOp{' ', a[i]})
			i++
			j++
		case t[(i+1)*w+j] >= t[i*w+j+1]:
			ops = append(ops, diffOp{'-', a[i]})
			i++
		default:
			ops = append(ops, diffOp{'+', c[j]})
			j++
		}
	}
	for ; i < n; i++ {
		ops = append(ops, diffOp{'-', a[i]})
	}
	for ; j < m; j++ {
		ops = append(ops, diffOp{'+', c[j]})
	}
	return ops
}
