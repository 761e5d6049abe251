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
	// Labels is the label set a flow asked for ("private since call
	// 12"); "" when no flow asked. An approval is bound to it.
	Labels string
}

const (
	maxLineBytes = 240 // each shown line, escaped, is cut head and tail past this
	maxLines     = 120 // shown argument lines; the middle is cut past this
)

// Present returns the text the operator reads for r and its digest. Every
// character a model or server chose is escaped (controls, ANSI/OSC, bidi,
// zero-width, combining marks); long lines and long argument documents are
// cut head and tail with the cut marked. It is the stored presentation of an
// approval; when it cut anything, a decision must name PresentFull's digest.
func Present(r Request) (text, digest string) {
	return present(r, false)
}

// PresentFull is Present with nothing cut: every byte of the call, escaped
// the same way. It is the only presentation whose digest a decision may
// name (SAFETY A4); when Present needed no cut it is the same text.
func PresentFull(r Request) (text, digest string) {
	return present(r, true)
}

func present(r Request, full bool) (text, digest string) {
	v := view{full: full}
	var b strings.Builder
	if r.Class == ledger.KindSampling || r.Class == ledger.KindElicitation {
		v.presentRequest(&b, r)
	} else {
		fmt.Fprintf(&b, "server    %s\n", v.show(r.Server, maxLineBytes))
		fmt.Fprintf(&b, "tool      %s\n", v.show(r.Tool, maxLineBytes))
		fmt.Fprintf(&b, "class     %s (rule %d)\n", v.show(r.Class, 40), r.Rule)
		fmt.Fprintf(&b, "pin       sha256:%s\n", v.show(r.PinDigest, 80))
		if r.Labels != "" {
			fmt.Fprintf(&b, "flow      this session holds %s\n", v.show(r.Labels, maxLineBytes))
		}
		b.WriteString("arguments\n")
		v.writeDocument(&b, r.Args)
	}
	sum := sha256.Sum256([]byte(b.String()))
	return b.String(), hex.EncodeToString(sum[:])
}

// view is one way of presenting: cut to bounds (what lists and the first
// look show), or full (every byte).
type view struct{ full bool }

// cut bounds escaped text to max bytes head and tail, unless the view is full.
func (v view) cut(s string, max int) string {
	if v.full {
		return s
	}
	return safetext.Cut(s, max)
}

// show escapes s and, unless the view is full, bounds it.
func (v view) show(s string, max int) string { return v.cut(safetext.Escape(s), max) }

// writeDocument writes the JSON document raw as indented lines, escaped,
// each line and the number of lines bounded unless the view is full.
func (v view) writeDocument(b *strings.Builder, raw []byte) {
	var lines []string
	if doc, err := canon.Decode(raw); len(raw) > 0 && err == nil {
		render(doc, "", "", &lines)
	} else if len(raw) == 0 {
		lines = []string{"{}"}
	} else { // not strict JSON: shown as bytes (such calls are refused before any ask)
		lines = []string{safetext.Escape(string(raw))}
	}
	v.writeLines(b, "  ", v.cutLines(lines, maxLines))
}

// cutLines keeps at most max lines, the head and the tail, marking the cut,
// unless the view is full.
func (v view) cutLines(lines []string, max int) []string {
	if v.full || len(lines) <= max {
		return lines
	}
	cut := len(lines) - max
	head, tail := lines[:max*2/3], lines[len(lines)-max/3:]
	return append(append(head, fmt.Sprintf("…[%d lines cut]…", cut)), tail...)
}

func (v view) writeLines(b *strings.Builder, indent string, lines []string) {
	for _, l := range lines {
		fmt.Fprintf(b, "%s%s\n", indent, v.cut(l, maxLineBytes))
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
	m := map[string]any{
		"server": r.Server, "tool": r.Tool, "pin": r.PinDigest, "class": r.Class,
		"rule": int64(r.Rule), "args": args, "presentation": presentationDigest,
	}
	if r.Labels != "" { // absent for every approval no flow asked: their bindings stand
		m["labels"] = r.Labels
	}
	b, err := canon.Marshal(m)
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
	return ledger.ApprovalStart{Presentation: text, PresentationDigest: digest, Binding: binding, Labels: r.Labels}, nil
}

// ErrTampered is returned for a stored approval whose columns no longer
// agree with its presentation or its binding.
var ErrTampered = errors.New("approvals: the approval row does not match its binding; it was changed outside mcp-guard and will not be acted on")

// Check verifies a stored approval: its presentation is what its call would
// present, and its binding covers exactly its columns.
func Check(a ledger.Approval) error {
	r := request(a)
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

func request(a ledger.Approval) Request {
	return Request{Server: a.Server, Tool: a.Tool, PinDigest: a.PinDigest, Class: a.Class, Rule: a.Rule, Args: a.Args, Labels: a.Labels}
}

// Full returns the presentation of a stored approval that shows every byte,
// and its digest. It is derived from the columns the binding covers, so it
// is bound as firmly as the stored presentation. When the stored
// presentation cut nothing, it is that presentation.
func Full(a ledger.Approval) (text, digest string) {
	return PresentFull(request(a))
}

// Cut reports how many bytes the stored presentation of a leaves out of the
// full one: 0 when it shows every byte (then its digest is the full one).
func Cut(a ledger.Approval) int {
	text, digest := Full(a)
	if digest == a.PresentationDigest {
		return 0
	}
	return max(len(text)-len(a.Presentation), 1)
}

// Decidable is what a decision checks (ledger.DecideApproval): the stored
// approval is untouched (Check), and the one digest a decision may name is
// that of the presentation that showed every byte (SAFETY A2, A4): a cut
// view's digest is refused.
func Decidable(a ledger.Approval) (string, error) {
	if err := Check(a); err != nil {
		return "", err
	}
	_, digest := Full(a)
	return digest, nil
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
