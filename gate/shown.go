package gate

import (
	"encoding/json"
	"sync/atomic"

	"github.com/mcp-guard/mcp-guard/pin"
)

// Shown holds the view the hosts are shown now, ComputeView's latest. The
// exposure stage reads it: a tools/call, prompts/get or resources/read is
// forwarded only while what it names is still exposed there under the pin
// the host was shown. The proxy sets it each time it recomputes the view,
// before it tells the hosts their lists changed.
type Shown struct{ v atomic.Pointer[View] }

// Set makes v the view shown.
func (s *Shown) Set(v *View) { s.v.Store(v) }

// View is the view shown, or nil before the first.
func (s *Shown) View() *View { return s.v.Load() }

// Tool is the tool exposed under name now.
func (s *Shown) Tool(name string) (ExposedTool, bool) {
	v := s.v.Load()
	if v == nil {
		return ExposedTool{}, false
	}
	e, ok := v.Exposed[name]
	return e, ok
}

// Item is the prompt, resource or template of that kind exposed under host
// (its name, host URI or host URI template) now.
func (s *Shown) Item(kind pin.ItemKind, host string) (ExposedItem, bool) {
	v := s.v.Load()
	if v == nil || v.Content == nil {
		return ExposedItem{}, false
	}
	e, ok := v.Content.Exposed[kind][host]
	return e, ok
}

// pinOf is the pin of what r names as it is exposed now: its tool, or the
// item its host listed (r.ItemKind, r.Listed).
func (s *Shown) pinOf(r *Request) (string, bool) {
	if r.Kind == KindTool {
		e, ok := s.Tool(r.Exposed)
		return e.Tool.Digest(), ok
	}
	e, ok := s.Item(r.ItemKind, r.Listed)
	return e.Item.Digest(), ok
}

// ToolRefusal is the refusal, for its ledger row, of a tools/call of name
// by the host of session: what the view shown knows of it, a withheld
// tool's server, name and why (or, readErr set, the tool shown whose
// call's params did not read). args are the call's arguments.
func (s *Shown) ToolRefusal(session, name string, args json.RawMessage, readErr error) Refusal {
	r := Refusal{Kind: KindTool, SessionID: session, Exposed: name, Args: args, Unread: readErr}
	v := s.v.Load()
	if v == nil {
		return r
	}
	if h, known := v.Known[name]; known {
		r.Server, r.Name, r.Hidden = h.Server, h.Name, h.Why
	}
	if e, ok := v.Exposed[name]; ok && readErr != nil {
		r.Server, r.Name, r.Hidden, r.Shown, r.PinDigest = e.Server, e.Tool.Name, "", true, e.Tool.Digest()
	}
	return r
}

// ItemRefusal is the refusal, for its ledger row, of a get (kind
// pin.Prompts, name the prompt's, args its arguments) or a read (name the
// host URI, which server and uri are upstream when it names a server) by
// the host of session: what the view shown knows of a withheld item
// overrides where it goes, and says why.
func (s *Shown) ItemRefusal(session string, kind pin.ItemKind, name string, args []byte, server, uri string) Refusal {
	r := Refusal{Kind: KindPrompt, SessionID: session, Exposed: name, Args: args}
	if kind != pin.Prompts {
		r.Kind, r.Args, r.Server, r.Name = KindResource, nil, server, uri
	}
	if v := s.v.Load(); v != nil && v.Content != nil {
		if h, ok := v.Content.Hidden[kind][name]; ok {
			r.Server, r.Name, r.Hidden = h.Server, h.Name, h.Why
		}
	}
	return r
}

// withdrawn is the refusal of r, whose target is not shown any more under
// the pin its host saw.
func (s *Shown) withdrawn(r *Request) Refusal {
	switch r.Kind {
	case KindTool:
		return s.ToolRefusal(r.SessionID, r.Exposed, r.Args, nil)
	case KindPrompt:
		return s.ItemRefusal(r.SessionID, pin.Prompts, r.Exposed, r.Args, "", "")
	}
	return s.ItemRefusal(r.SessionID, pin.Resources, r.Exposed, nil, r.Server, r.Name)
}
