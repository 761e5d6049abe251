package gate

import (
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
