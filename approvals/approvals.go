package approvals

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/mcp-guard/mcp-guard/internal/canon"
	"github.com/mcp-guard/mcp-guard/internal/safetext"
	"github.com/mcp-guard/mcp-guard/ledger"
)

// Request is the call an approval holds.
type Request struct {
	Server, Tool, PinDigest, Class string
	Rule                           int
	Args                           []byte // the exact argument bytes that will be forwarded
}

const (
	maxLineBytes = 240 // each shown line, escaped, is cut head and tail past this
	maxLines     = 120 // shown argument lines; the middle is cut past this
)

// Present returns the text the operator reads for r and its digest. Every
// character a model or server chose is escaped (controls, ANSI/OSC, bidi,
// zero-width, combining marks); long lines and long argument documents are
// cut head and tail with the cut marked.
func Present(r Request) (text, digest string) {
	var b strings.Builder
	if r.Class == ledger.KindSampling || r.Class == ledger.KindElicitation {
		presentRequest(&b, r)
	} else {
		fmt.Fprintf(&b, "server    %s\n", safetext.Show(r.Server, maxLineBytes))
		fmt.Fprintf(&b, "tool      %s\n", safetext.Show(r.Tool, maxLineBytes))
		fmt.Fprintf(&b, "class     %s (rule %d)\n", safetext.Show(r.Class, 40), r.Rule)
		fmt.Fprintf(&b, "pin       sha256:%s\n", safetext.Show(r.PinDigest, 80))
		b.WriteString("arguments\n")
		writeDocument(&b, r.Args)
	}
	sum := sha256.Sum256([]byte(b.String()))
	return b.String(), hex.EncodeToString(sum[:])
}

// writeDocument writes the JSON document raw as indented lines, escaped,
// each line and the number of lines bounded.
func writeDocument(b *strings.Builder, raw []byte) {
	var lines []string
	if doc, err := canon.Decode(raw); len(raw) > 0 && err == nil {
		render(doc, "", "", &lines)
	} else if len(raw) == 0 {
		lines = []string{"{}"}
	} else { // not strict JSON: shown as bytes (such calls are refused before any ask)
		lines = []string{safetext.Escape(string(raw))}
	}
	writeLines(b, "  ", cutLines(lines, maxLines))
}

// cutLines keeps at most max lines, the head and the tail, marking the cut.
func cutLines(lines []string, max int) []string {
	if len(lines) <= max {
		return lines
	}
	cut := len(lines) - max
	head, tail := lines[:max*2/3], lines[len(lines)-max/3:]
	return append(append(head, fmt.Sprintf("…[%d lines cut]…", cut)), tail...)
}

func writeLines(b *strings.Builder, indent string, lines []string) {
	for _, l := range lines {
		fmt.Fprintf(b, "%s%s\n", indent, safetext.Cut(l, maxLineBytes))
	}
}

// Bind is the digest an approval is bound by: server, tool, pin, class, rule,
// the canonical argument bytes and the digest of the presentation shown.
func Bind(r Request, presentationDigest string) (string, error) {
	args := json.RawMessage(`{}`)
	if len(r.Args) > 0 {
		c, err := canon.Canonical(r.Args)
		if err != nil {
			return "", fmt.Errorf("approvals: arguments: %w", err)
		}
		args = c
	}
	b, err := canon.Marshal(map[string]any{
		"server": r.Server, "tool": r.Tool, "pin": r.PinDigest, "class": r.Class,
		"rule": int64(r.Rule), "args": args, "presentation": presentationDigest,
	})
	if err != nil {
		return "", fmt.Errorf("approvals: bind: %w", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// New builds the approval for r: what the operator is shown, and the binding.
func New(r Request) (ledger.ApprovalStart, error) {
	text, digest := Present(r)
	binding, err := Bind(r, digest)
	if err != nil {
		return ledger.ApprovalStart{}, err
	}
	return ledger.ApprovalStart{Presentation: text, PresentationDigest: digest, Binding: binding}, nil
}

// ErrTampered is returned for a stored approval whose columns no longer
// agree with its presentation or its binding.
var ErrTampered = errors.New("approvals: the approval row does not match its binding; it was changed outside mcp-guard and will not be acted on")

// Check verifies a stored approval: its presentation is what its call would
// present, and its binding covers exactly its columns.
func Check(a ledger.Approval) error {
	r := Request{Server: a.Server, Tool: a.Tool, PinDigest: a.PinDigest, Class: a.Class, Rule: a.Rule, Args: a.Args}
	text, digest := Present(r)
	if text != a.Presentation || digest != a.PresentationDigest {
		return ErrTampered
	}
	binding, err := Bind(r, digest)
	if err != nil || binding != a.Binding {
		return ErrTampered
	}
	return nil
}

// render writes v as indented JSON-like lines, keys sorted, every string
// (keys too) shown with safetext.Escape so decoded control, bidi, zero-width
// and combining characters appear as visible escapes.
func render(v any, indent, prefix string, out *[]string) {
	switch t := v.(type) {
	case map[string]any:
		if len(t) == 0 {
			*out = append(*out, indent+prefix+"{}")
			return
		}
		*out = append(*out, indent+prefix+"{")
		keys := make([]string, 0, len(t))
		for k := range t {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			render(t[k], indent+"  ", quote(k)+": ", out)
		}
		*out = append(*out, indent+"}")
	case []any:
		if len(t) == 0 {
			*out = append(*out, indent+prefix+"[]")
			return
		}
		*out = append(*out, indent+prefix+"[")
		for _, e := range t {
			render(e, indent+"  ", "", out)
		}
		*out = append(*out, indent+"]")
	case string:
		*out = append(*out, indent+prefix+quote(t))
	case nil:
		*out = append(*out, indent+prefix+"null")
	default: // json.Number, bool
		*out = append(*out, fmt.Sprintf("%s%s%v", indent, prefix, t))
	}
}

func quote(s string) string {
	return `"` + strings.ReplaceAll(safetext.Escape(s), `"`, `\"`) + `"`
}
