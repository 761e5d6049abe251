package gate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/mcp-guard/mcp-guard/classify"
	"github.com/mcp-guard/mcp-guard/ledger"
	"github.com/mcp-guard/mcp-guard/pin"
	"github.com/mcp-guard/mcp-guard/secrets"
)

// The exposure checks: why a listed definition is never pinned, never
// shown to the host, or withheld until the operator decides. They are
// pure; the view (view.go: what the host sees at one moment) applies them
// in one order to every tool, prompt, resource and template, and pins only
// what CheckTool and CheckItem pass. TrustNew says when a definition never
// seen before is pinned at once.

// InstructionsPin is the pin name of a server's instructions.
const InstructionsPin = ""

// DigestOf is the hex SHA-256 of raw bytes.
func DigestOf(raw []byte) string {
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])
}

// SchemaCompiler compiles tool schemas within their caps; *pin.SchemaCache
// is one.
type SchemaCompiler interface {
	Compile(raw []byte) (*pin.Schema, error)
	CompileOutput(raw []byte) (*pin.Schema, error)
}

// PinIndex is the pins by server and pin name.
type PinIndex map[[2]string]ledger.Pin

func IndexPins(pins []ledger.Pin) PinIndex {
	out := make(PinIndex, len(pins))
	for _, pn := range pins {
		out[[2]string{pn.Server, pn.Tool}] = pn
	}
	return out
}

// ServerHold says why nothing of a server is exposed while its instructions
// are not pinned as they are now, or "" when they are.
func ServerHold(server string, instructions []byte, pins PinIndex, assume bool) string {
	ip, ok := pins[[2]string{server, InstructionsPin}]
	if !ok && assume {
		ip, ok = ledger.Pin{State: ledger.PinPinned, Digest: DigestOf(instructions)}, true
	}
	if !ok || ip.State != ledger.PinPinned || ip.Digest != DigestOf(instructions) {
		st := "unpinned"
		if ok {
			st = ip.State
		}
		return fmt.Sprintf("the server's instructions are %s: see mcp-guard pin diff %s/", st, server)
	}
	return ""
}

// InstructionsText is a server's instructions (raw JSON string) as hosts
// are given them, or "" with why not: empty, or carrying text that can
// hide itself from the operator who pinned them.
func InstructionsText(raw []byte) (text, why string) {
	if json.Unmarshal(raw, &text) != nil || text == "" {
		return "", ""
	}
	if probs := pin.CheckText(pin.Tool{Description: text}); len(probs) > 0 {
		return "", pin.DescribeProblems(probs)
	}
	return text, ""
}

// CheckTool returns why a listed tool must be refused whatever the pins
// say: a name taken by the pin names of prompts and resources, text that
// can hide itself from the operator, or an inputSchema or outputSchema
// that does not compile within its caps. Otherwise it returns both schemas
// compiled (output nil when the tool has none).
func CheckTool(schemas SchemaCompiler, t pin.Tool) (in, out *pin.Schema, why string) {
	if pin.IsItemPinName(t.Name) {
		return nil, nil, "refused: a tool name may not start with prompt:, resource:, template: or oauth: (the pin names of prompts, resources and sign-ins)"
	}
	if probs := pin.CheckText(t); len(probs) > 0 {
		return nil, nil, "refused: " + pin.DescribeProblems(probs)
	}
	in, err := schemas.Compile(t.InputSchema)
	if err != nil {
		return nil, nil, "refused: inputSchema: " + err.Error()
	}
	if len(t.OutputSchema) > 0 {
		if out, err = schemas.CompileOutput(t.OutputSchema); err != nil {
			return nil, nil, "refused: outputSchema: " + err.Error()
		}
	}
	return in, out, ""
}

// CarriesSecret says why a listed definition carrying a known secret is
// refused (which secret, for the operator; the host never sees it), or "".
func CarriesSecret(r *secrets.Redactor, raw []byte) string {
	if r == nil {
		return ""
	}
	var known []string
	for _, h := range r.Contains(raw) {
		if h.Known() {
			known = append(known, h.String())
		}
	}
	if len(known) == 0 {
		return ""
	}
	return "refused: the definition carries a credential mcp-guard holds (" + strings.Join(known, "; ") + "); it is never shown to the host"
}

// CheckItem says why a listed item must be refused whatever the pins say:
// text that can hide itself from the operator, or a template that does not
// parse.
func CheckItem(it pin.Item, parseTemplate func(string) error) string {
	if probs := pin.CheckItemText(it.Raw); len(probs) > 0 {
		return "refused: " + pin.DescribeProblems(probs)
	}
	if it.Kind == pin.Templates {
		if err := parseTemplate(it.Key); err != nil {
			return fmt.Sprintf("refused: uriTemplate %q does not parse: %v", it.Key, err)
		}
	}
	return ""
}

// Duplicates are the keys listed more than once.
func Duplicates(keys []string) map[string]bool {
	seen, dups := map[string]bool{}, map[string]bool{}
	for _, k := range keys {
		if seen[k] {
			dups[k] = true
		}
		seen[k] = true
	}
	return dups
}

// Listed is one listed tool or item on its way through ComputeView.
type Listed struct {
	Server, PinName, Digest string
	Refused                 string // why it is refused whatever the pins say
	TaskOnly                bool   // a tool that can only run as a task
	Match                   classify.Match
	Covered                 bool // a rule covers it
}

// Withhold says why an item is not shown before its name is looked at, or
// "" when nothing withholds it, and its pin state for the reports. The
// checks run in one order for every kind: rules, refusal, tasks, the
// server's instructions, the pin.
func Withhold(it Listed, hold string, pins PinIndex, assume bool) (why, pinState string) {
	pn, pinned := pins[[2]string{it.Server, it.PinName}]
	if !pinned && assume && it.Refused == "" {
		// what serve would do: pin it at first contact (or with trust_new_tools)
		pn, pinned = ledger.Pin{State: ledger.PinPinned, Digest: it.Digest}, true
	}
	switch {
	case it.Refused != "":
		pinState = "refused"
	case pinned:
		pinState = pn.State
	}
	switch {
	case !it.Covered:
		return "no rule matches it", pinState
	case it.Refused != "":
		return it.Refused, pinState
	case it.TaskOnly:
		// mcp-guard offers hosts no tasks, so such a tool could never be called.
		return "it can only run as a task, and mcp-guard does not relay tasks", pinState
	case hold != "":
		return hold, pinState
	case !pinned || pn.State != ledger.PinPinned || pn.Digest != it.Digest:
		st := "not pinned"
		if pinned {
			st = "pin " + pn.State
		}
		return fmt.Sprintf("%s: see mcp-guard pin diff %s/%s", st, it.Server, it.PinName), pinState
	}
	return "", pinState
}

// TrustNew says whether what one listing of server shows for the first
// time is pinned at once, and why (ledger.TrustNone: it waits for the
// operator). With tofu (pin.mode "tofu") that is the server's first
// contact: no pin of it is recorded yet. After that, what it adds waits
// like a changed definition, unless trustNewTools (its [[server]] says
// trust_new_tools). It is decided once per listing, before the listing's
// own pins are written. When the store cannot say whether the server was
// seen, what is new waits (and err says why).
func TrustNew(ctx context.Context, s Store, server string, tofu, trustNewTools bool) (string, error) {
	if !tofu {
		return ledger.TrustNone, nil
	}
	if trustNewTools {
		return ledger.TrustNewTools, nil
	}
	seen, err := s.ServerSeen(ctx, server)
	if err != nil {
		return ledger.TrustNone, err
	}
	if seen {
		return ledger.TrustNone, nil
	}
	return ledger.TrustFirstContact, nil
}
