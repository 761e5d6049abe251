package proxy

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcp-guard/mcp-guard/gate"
)

// handler is the one tools/call handler: the gate decides, and only an
// allowed call is forwarded, with the host's argument bytes.
func (p *Proxy) handler(e exposed) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args := req.Params.RawArguments
		if len(args) > 0 {
			one, changed, err := oneLine(args)
			if err != nil {
				return mcp.NewToolResultError("mcp-guard: arguments are not valid JSON: " + err.Error()), nil
			}
			if changed {
				p.log.Info("arguments had line breaks between tokens; removed before checking and forwarding", "tool", e.Name)
			}
			args = one
		}
		d := p.opts.Gate.Decide(e.Server, e.Tool.Name, args)
		p.log.Info("call", "tool", e.Name, "decision", d.Outcome.String(), "rule", d.Rule, "class", string(d.Class), "reason", d.Reason)
		if d.Outcome != gate.Allow {
			return mcp.NewToolResultError(d.Message), nil
		}
		u := p.ups[e.Server]
		var onProgress func(json.RawMessage)
		if req.Params.Meta != nil && req.Params.Meta.ProgressToken != nil {
			onProgress = p.progressRelay(ctx, req.Params.Meta.ProgressToken)
		}
		res, err := u.callTool(ctx, e.Tool.Name, args, onProgress)
		if err != nil {
			p.log.Warn("call failed", "tool", e.Name, "err", err)
			return nil, fmt.Errorf("mcp-guard: %s: %w", e.Name, err)
		}
		out, err := hostResult(res)
		if err != nil {
			p.log.Warn("upstream result refused", "tool", e.Name, "err", err)
			return mcp.NewToolResultError(fmt.Sprintf("mcp-guard: %s returned a result mcp-guard cannot read: %v", e.Name, err)), nil
		}
		return out, nil
	}
}

// progressRelay returns a function that passes an upstream progress
// notification to the host request that asked for progress, under the
// host's own token. It runs on an upstream read loop and never blocks.
func (p *Proxy) progressRelay(ctx context.Context, hostToken mcp.ProgressToken) func(json.RawMessage) {
	srv := server.ServerFromContext(ctx)
	return func(params json.RawMessage) {
		var fields map[string]json.RawMessage
		if json.Unmarshal(params, &fields) != nil {
			return
		}
		out := rawFields(fields)
		out["progressToken"] = hostToken
		if err := srv.SendNotificationToClient(ctx, "notifications/progress", out); err != nil {
			p.log.Debug("progress not delivered to host", "err", err)
		}
	}
}

// rawContent is one content block passed to the host as the upstream sent
// it, whatever its type. Embedding TextContent satisfies mcp-go's sealed
// Content interface; MarshalJSON emits the raw block.
type rawContent struct {
	mcp.TextContent
	raw json.RawMessage
}

func (r rawContent) MarshalJSON() ([]byte, error) { return r.raw, nil }

// hostResult carries content, structuredContent, isError and _meta from the
// upstream's raw result to the host.
func hostResult(raw json.RawMessage) (*mcp.CallToolResult, error) {
	var r struct {
		Content           *[]json.RawMessage         `json:"content"`
		StructuredContent json.RawMessage            `json:"structuredContent"`
		IsError           bool                       `json:"isError"`
		Meta              map[string]json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, err
	}
	if r.Content == nil {
		return nil, fmt.Errorf(`no "content" array`)
	}
	out := &mcp.CallToolResult{Content: make([]mcp.Content, 0, len(*r.Content)), IsError: r.IsError}
	for _, c := range *r.Content {
		out.Content = append(out.Content, rawContent{raw: c})
	}
	if len(r.StructuredContent) > 0 && string(r.StructuredContent) != "null" {
		out.RawStructuredContent = r.StructuredContent
	}
	if len(r.Meta) > 0 {
		out.Meta = &mcp.Meta{AdditionalFields: rawFields(r.Meta)}
	}
	return out, nil
}
