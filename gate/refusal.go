package gate

import (
	"context"
	"encoding/json"

	"github.com/mcp-guard/mcp-guard/internal/canon"
	"github.com/mcp-guard/mcp-guard/ledger"
)

// Refusal is a request refused before the pipeline decides it: a tool,
// prompt or resource the host was not shown (or no longer is), a request
// that could not be read, or a modern retry that continues no call of its
// host. Nothing of it is forwarded; Row is what the ledger records of it,
// for serve (Pipeline.Refuse) and for explain alike. The caller says what
// the host's view knows of the target; the row is built here only.
type Refusal struct {
	Kind      Kind   // KindTool, KindPrompt or KindResource
	SessionID string // the host's ledger session
	Exposed   string // the name or URI as the host sent it
	// Server and Name are what the target is upstream, when the view
	// knows: a hidden item, or one still shown whose request is refused.
	Server, Name string
	// Hidden is why the view does not show the target it names ("" when it
	// does not name one, or shows it).
	Hidden string
	// Shown reports a target the host is shown: the request itself is
	// refused (Unread or Retry), with PinDigest the pin it was shown.
	Shown     bool
	PinDigest string
	// Args are the request's arguments, as the host sent them.
	Args json.RawMessage
	// Unread is why the request could not be read; Retry why a modern
	// retry continues no call.
	Unread, Retry error
}

// Row is the ledger's record of the refusal.
func (r Refusal) Row() ledger.CallStart {
	start := ledger.CallStart{Kind: r.Kind.LedgerKind(), SessionID: r.SessionID, Exposed: r.Exposed, Server: r.Server, Tool: r.Name}
	switch r.Kind {
	case KindPrompt:
		start.Decision, start.Reason = "unknown_prompt", "no prompt of that name is exposed"
	case KindResource:
		start.Decision, start.Reason = "unknown_resource", "neither a resource mcp-guard exposes nor one of its templates' URIs"
	default:
		start.Kind = ""
		start.Decision, start.Reason = "unknown_tool", "no tool of that name is exposed"
	}
	if r.Hidden != "" {
		start.Reason = "the " + r.Kind.noun() + " is not exposed: " + r.Hidden
	}
	switch {
	case r.Retry != nil && r.Shown:
		start.PinDigest = r.PinDigest
		start.Decision, start.Reason = Invalid.String(), "multi round-trip retry refused: "+r.Retry.Error()
	case r.Unread != nil && r.Shown:
		start.PinDigest = r.PinDigest
		start.Decision, start.Reason = Invalid.String(), "the request could not be read: "+r.Unread.Error()
	case r.Unread != nil:
		start.Reason += "; the request could not be read either: " + r.Unread.Error()
	}
	switch {
	case r.Kind == KindResource:
		// A read is recorded with the upstream URI it names, if any.
		if r.Server != "" {
			start.Args, _ = resourceArgs(r.Name)
		}
	case len(r.Args) == 0:
	case r.Unread == nil && Recordable(r.Args):
		start.Args = r.Args
	default:
		start.ArgsInvalid = r.Args
	}
	if start.Exposed == "" {
		start.Exposed = "(empty)"
	}
	return start
}

// noun is how a refusal's reason names a target of kind k.
func (k Kind) noun() string {
	switch k {
	case KindPrompt:
		return "prompt"
	case KindResource:
		return "resource"
	}
	return "tool"
}

// Refuse records r, on a context that outlives the host's cancellation,
// and returns its ledger call and what was recorded.
func (p *Pipeline) Refuse(ctx context.Context, r Refusal) (int64, ledger.CallStart, error) {
	start := r.Row()
	id, err := p.commit(ctx, start)
	return id, start, err
}

// resourceArgs are what a read is recorded with: {"uri":<upstream URI>}.
func resourceArgs(uri string) ([]byte, error) {
	return canon.Marshal(map[string]string{"uri": uri})
}
