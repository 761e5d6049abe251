package notify

import (
	"fmt"
	"strings"

	"github.com/mcp-guard/mcp-guard/internal/safetext"
)

// Waiting is one request held for the operator, as a notification names it.
// It has no field for the request's arguments: they are never shown.
type Waiting struct {
	// Kind is the ledger's kind of request: "tool", "prompt", "resource",
	// "sampling", "elicitation" or "roots".
	Kind   string
	Server string
	// Name is the tool or prompt; empty for a resource read, whose URI is
	// its argument.
	Name     string
	Approval int64
}

// note is one notification: a one-line summary and a body of plain text.
type note struct {
	Summary string
	Body    string
}

// nameMax bounds each name shown, after escaping.
const nameMax = 80

// show is how a name chosen by an upstream or the operator is written into
// a notification: escaped (no control, bidi, zero-width or tag character
// raw) and bounded.
func show(s string) string { return safetext.Show(s, nameMax) }

// text is the notification for w.
func text(w Waiting) note {
	server := show(w.Server)
	var what string
	switch w.Kind {
	case "tool", "":
		what = fmt.Sprintf("A call to %s/%s", server, show(w.Name))
	case "prompt":
		what = fmt.Sprintf("A get of prompt %s/%s", server, show(w.Name))
	case "resource":
		what = fmt.Sprintf("A read of a resource of %s", server)
	case "sampling":
		what = fmt.Sprintf("A sampling request from %s", server)
	case "elicitation":
		what = fmt.Sprintf("An elicitation request from %s", server)
	case "roots":
		what = fmt.Sprintf("A roots request from %s", server)
	default:
		what = fmt.Sprintf("A %s request from %s", show(w.Kind), server)
	}
	return note{
		Summary: fmt.Sprintf("mcp-guard: approval %d waits for you", w.Approval),
		Body:    fmt.Sprintf("%s waits for your decision.\nmcp-guard approvals show %d", what, w.Approval),
	}
}

// escapeMarkup escapes the characters a notification server that
// announces "body-markup" would read as markup.
func escapeMarkup(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&apos;").Replace(s)
}
