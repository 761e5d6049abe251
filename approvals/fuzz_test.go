package approvals

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/mcp-guard/mcp-guard/internal/canon"
	"github.com/mcp-guard/mcp-guard/internal/safetext"
	"github.com/mcp-guard/mcp-guard/ledger"
)

// Bounds on what Present writes, from the package's own caps: at most
// maxLines argument lines and maxTextLines lines per wrapped section (plus
// one cut marker each), maxFields form fields, and a few fixed header lines;
// every line cut at maxLineBytes, plus its indent, a fixed label and the
// cut marker's byte count.
const (
	presentMaxLines    = 12 + 2*(maxTextLines+1) + (maxFields + 1) + (maxLines + 1)
	presentMaxLineSize = maxLineBytes + 100
)

// FuzzPresent feeds arbitrary calls and server requests (any server, tool,
// class, pin, rule and argument bytes; the class is picked by kind so that
// sampling and elicitation requests are reached) through the presentation
// the operator reads (Present, and Title for lists) and checks what the
// package promises (SAFETY A4): the text holds no control character but
// newline, no bidi, zero-width, format, tag or combining character, and no
// invalid UTF-8; it is bounded; a URL the user is asked to open is shown in
// ASCII only; the same request gives the same text and digest; and an
// approval is built for strict JSON arguments (with the exceptions noted
// below), never for others, and then checks clean.
func FuzzPresent(f *testing.F) {
	f.Add(uint8(0), "fs", "write_file", "write", "ab12", 2, []byte(`{"path":"/tmp/\u202eexe.txt","note":"a\u001b[2Jb e\u0301"}`))
	f.Add(uint8(1), "every", "sampling/createMessage", "", "", 0, []byte(`{"messages":[{"role":"user","content":{"type":"text","text":"hi\u200b"}}],"maxTokens":9}`))
	f.Add(uint8(2), "every", "elicitation/create", "", "", 0, []byte(`{"mode":"url","url":"https://b\u0430nk.example/\u202ex","message":"Log in"}`))
	f.Add(uint8(2), "every", "elicitation/create", "", "", 0, []byte(`{"message":"Who?","requestedSchema":{"type":"object","properties":{"n\u0000":{"type":"string","description":"\u001b]8;;x\u0007"}}}}`))
	f.Fuzz(func(t *testing.T, kind uint8, server, tool, class, pin string, rule int, args []byte) {
		switch kind % 3 {
		case 1:
			class = ledger.KindSampling
		case 2:
			class = ledger.KindElicitation
		}
		r := Request{Server: server, Tool: tool, PinDigest: pin, Class: class, Rule: rule, Args: args}
		text, digest := Present(r)

		checkShown(t, "presentation", text, true)
		full, _ := PresentFull(r)
		checkShown(t, "full presentation", full, true)
		lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
		if !strings.HasSuffix(text, "\n") {
			t.Fatalf("presentation does not end in a newline:\n%s", text)
		}
		if len(lines) > presentMaxLines {
			t.Fatalf("presentation has %d lines, more than %d", len(lines), presentMaxLines)
		}
		for i, l := range lines {
			if len(l) > presentMaxLineSize {
				t.Fatalf("line %d is %d bytes, more than %d: %q", i, len(l), presentMaxLineSize, l)
			}
		}
		if sum := sha256.Sum256([]byte(text)); digest != hex.EncodeToString(sum[:]) {
			t.Fatalf("digest %s is not the SHA-256 of the text", digest)
		}
		for range 2 { // map order is random in Go: twice more
			if t2, d2 := Present(r); t2 != text || d2 != digest {
				t.Fatalf("the same request presented differently:\n%s\n---\n%s", text, t2)
			}
		}

		p := elicitationURL(r)
		if p != nil {
			checkURLSection(t, lines)
		}

		ap, err := New(r)
		strict := len(args) == 0 || canon.Check(args) == nil
		switch {
		case !strict && err == nil:
			t.Fatal("New built an approval for arguments the strict reader refuses")
		case strict && err != nil && canon.Depth(args) < canon.MaxDepth && rule >= -1<<53 && rule <= 1<<53 &&
			utf8.ValidString(server) && utf8.ValidString(tool) && utf8.ValidString(pin) && utf8.ValidString(class):
			t.Fatalf("New refused strict arguments: %v", err)
		}
		// Not required either way (canon refuses to encode them, so Bind
		// may): arguments nested exactly canon.MaxDepth deep (the binding
		// document wraps them one level deeper; the ledger's call event does
		// the same), a rule number beyond 2^53 (rules are indexes), and a
		// server, tool, pin or class that is not UTF-8 (config names, tool
		// names read by encoding/json, hex digests and classes always are).
		if err == nil {
			if ap.Presentation != text || ap.PresentationDigest != digest {
				t.Fatal("New shows other text than Present")
			}
			a := ledger.Approval{Server: server, Tool: tool, PinDigest: pin, Class: class, Rule: rule, Args: args,
				Presentation: ap.Presentation, PresentationDigest: ap.PresentationDigest, Binding: ap.Binding}
			if err := Check(a); err != nil {
				t.Fatalf("an untouched approval does not check: %v", err)
			}
		}

		title := Title(ledger.Approval{Server: server, Tool: tool, PinDigest: pin, Class: class, Rule: rule, Args: args})
		checkShown(t, "title", title, false)
		if p != nil {
			prefix := safetext.Escape(server) + " asks the user to open a URL (elicitation): "
			if !strings.HasPrefix(title, prefix) {
				t.Fatalf("title %q does not name the URL", title)
			}
			if u := title[len(prefix):]; !printableASCII(u) {
				t.Fatalf("the URL in the title is not shown in ASCII: %q", u)
			}
		}
	})
}

// checkShown fails t if s, text shown to the operator, is not valid UTF-8 or
// holds a character that can hide, move or reorder text on a terminal. The
// list is written out here, independently of safetext, then safetext's own
// predicate is applied too (it also covers unassigned and private-use code
// points). A newline is allowed only when newlines is set.
func checkShown(t *testing.T, what, s string, newlines bool) {
	t.Helper()
	if !utf8.ValidString(s) {
		t.Fatalf("%s is not valid UTF-8: %q", what, s)
	}
	for i, r := range s {
		if r == '\n' && newlines {
			continue
		}
		if hidden(r) || safetext.Suspicious(r) {
			t.Fatalf("%s holds %U at byte %d: %q", what, r, i, s)
		}
	}
}

func hidden(r rune) bool {
	switch {
	case r < 0x20, r == 0x7F, r >= 0x80 && r <= 0x9F: // C0 (ESC, CR, TAB...), DEL, C1 (CSI, OSC, NEL...)
		return true
	case r >= 0x200B && r <= 0x200F, // zero-width space, non-joiner, joiner, LRM, RLM
		r >= 0x2028 && r <= 0x202E,   // line and paragraph separators, bidi embeddings and overrides
		r >= 0x2060 && r <= 0x2069,   // word joiner, invisible operators, bidi isolates
		r == 0xFEFF,                  // zero-width no-break space
		r >= 0xE0000 && r <= 0xE007F: // tag characters
		return true
	}
	return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Cs, unicode.Co, unicode.Mn, unicode.Me, unicode.Zl, unicode.Zp)
}

func printableASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7E {
			return false
		}
	}
	return true
}

// elicitationURL returns the params of r when r is a URL-mode elicitation
// the presentation reads as one, else nil.
func elicitationURL(r Request) map[string]any {
	if r.Class != ledger.KindElicitation {
		return nil
	}
	doc, err := canon.Decode(r.Args)
	p, _ := doc.(map[string]any)
	if err != nil || p == nil {
		return nil
	}
	if m, _ := p["mode"].(string); m != "url" {
		return nil
	}
	return p
}

// checkURLSection: in a URL-mode elicitation, the URL's lines and the host
// it opens are printable ASCII (a cut marker's "…" aside), so a look-alike
// host cannot pass for another.
func checkURLSection(t *testing.T, lines []string) {
	t.Helper()
	if len(lines) < 4 || !strings.HasPrefix(lines[1], "request   ") || !strings.HasSuffix(lines[1], "(URL mode): the server asks the user to OPEN THIS URL") ||
		lines[2] != "url       (every character outside ASCII is shown escaped)" {
		t.Fatalf("a URL-mode elicitation is not shown as one:\n%s", strings.Join(lines, "\n"))
	}
	i := 3
	for ; i < len(lines) && strings.HasPrefix(lines[i], "    "); i++ {
		if !printableASCII(strings.ReplaceAll(lines[i], "…", "")) {
			t.Fatalf("URL line %q is not ASCII", lines[i])
		}
	}
	if i == 3 || i == len(lines) || !strings.HasPrefix(lines[i], "opens     ") {
		t.Fatalf("no URL lines, or no opens line after them:\n%s", strings.Join(lines, "\n"))
	}
	if !printableASCII(strings.ReplaceAll(lines[i], "…", "")) {
		t.Fatalf("opens line %q is not ASCII", lines[i])
	}
}
