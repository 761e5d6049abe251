package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-guard/mcp-guard/internal/safetext"
	"github.com/mcp-guard/mcp-guard/pin"
)

// completer answers completion/complete for exposed prompts and resource
// templates by asking the server that owns them, under its own name or URI.
// A prompt or template the host is not shown gets no completions.
type completer struct{ p *Proxy }

func (c completer) CompletePromptArgument(ctx context.Context, name string, arg mcp.CompleteArgument, cctx mcp.CompleteContext) (*mcp.Completion, error) {
	e, ok := c.p.currentItem(pin.Prompts, name)
	if !ok {
		return nil, fmt.Errorf("mcp-guard: no prompt %q is exposed", name)
	}
	return c.p.complete(ctx, e.server, map[string]any{"type": "ref/prompt", "name": e.item.Key}, arg, cctx)
}

func (c completer) CompleteResourceArgument(ctx context.Context, uri string, arg mcp.CompleteArgument, cctx mcp.CompleteContext) (*mcp.Completion, error) {
	e, ok := c.p.currentItem(pin.Templates, uri)
	if !ok {
		return nil, fmt.Errorf("mcp-guard: no resource template %q is exposed", uri)
	}
	return c.p.complete(ctx, e.server, map[string]any{"type": "ref/resource", "uri": e.item.Key}, arg, cctx)
}

// complete forwards one completion/complete and returns its values escaped:
// they are text a person picks from.
func (p *Proxy) complete(ctx context.Context, server string, ref map[string]any, arg mcp.CompleteArgument, cctx mcp.CompleteContext) (*mcp.Completion, error) {
	u := p.upstream(server)
	if u == nil {
		return nil, fmt.Errorf("mcp-guard: upstream %q is not connected", server)
	}
	params := map[string]any{"ref": ref, "argument": arg}
	if len(cctx.Arguments) > 0 {
		params["context"] = cctx
	}
	b, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	cctx2, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	res, err := u.Call(cctx2, "completion/complete", b)
	if err != nil {
		p.log.Warn("completion/complete failed", "server", server, "err", err)
		return nil, hostFailure(server+": completion/complete", 0, err)
	}
	var r struct {
		Completion mcp.Completion `json:"completion"`
	}
	if err := json.Unmarshal(res, &r); err != nil {
		return nil, fmt.Errorf("mcp-guard: %s: completion/complete: bad result: %w", server, err)
	}
	if len(r.Completion.Values) > 100 {
		r.Completion.Values = r.Completion.Values[:100]
		r.Completion.HasMore = true
	}
	for i, v := range r.Completion.Values {
		r.Completion.Values[i] = safetext.Show(v, 1024)
	}
	return &r.Completion, nil
}
