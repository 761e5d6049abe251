package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcp-guard/mcp-guard/gate"
	"github.com/mcp-guard/mcp-guard/internal/canon"
	up "github.com/mcp-guard/mcp-guard/upstream"
)

// recordTimeout bounds a ledger write made on behalf of a request.
const recordTimeout = gate.RecordTimeout

// handler is the one tools/call handler: it reads the MCP request, runs it
// through the gate's pipeline (decided, committed to the ledger, held for
// the operator when a rule asks, and only then forwarded, with the argument
// bytes that were checked and recorded) and puts the result in MCP terms.
func (p *Proxy) handler(e gate.ExposedTool) server.ToolHandlerFunc {
	pinDigest := e.Tool.Digest()
	current := func() (string, bool) {
		now, ok := p.current(e.Name)
		return now.Tool.Digest(), ok
	}
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ctx, done := p.cancels.cancellable(ctx, nil)
		defer done()
		args := req.Params.RawArguments
		if len(args) > 0 {
			if one, changed, err := oneLine(args); err == nil {
				if changed {
					p.log.Info("arguments had line breaks between tokens; removed before checking and forwarding", "tool", e.Name)
				}
				args = one
			}
		}
		host := p.hostOf(ctx)
		name, raw, meta := req.Params.Name, req.Params.RawArguments, req.Params.Meta
		r := gate.Request{
			Kind:      gate.KindTool,
			Session:   host.gate,
			SessionID: host.lease.ID(),
			Scope:     host.scope,
			Server:    e.Server,
			Name:      e.Tool.Name,
			Exposed:   e.Name,
			PinDigest: pinDigest,
			Current:   current,
			Unknown:   func() gate.Refusal { return p.toolRefusal(ctx, name, raw, nil) },
			Schema:    e.Schema,
			Output:    e.Output,
			Args:      args,
			Pending:   &host.pending,
		}
		if hostElicits(ctx) {
			r.AskHost = func(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
				return p.askHost(ctx, "elicitation/create", params)
			}
		}
		if meta != nil && meta.ProgressToken != nil {
			token := meta.ProgressToken
			r.Progress = func(n int, apID int64) {
				_ = p.notifyHost(ctx, "notifications/progress", map[string]any{
					"progressToken": token, "progress": n,
					"message": fmt.Sprintf("waiting for the operator to approve the call (mcp-guard approve %d)", apID),
				})
			}
		}
		run := func(ctx context.Context) (*mcp.CallToolResult, error) {
			res := p.pipe.Run(ctx, &r, gate.ForwardFunc(func(ctx context.Context, id int64, late func(json.RawMessage, error)) (json.RawMessage, error) {
				return p.forward(ctx, meta, e, args, id, late)
			}))
			return p.toolAnswer(ctx, e, res)
		}
		if modernHost(ctx) {
			// 2026-07-28: the upstream's requests for the host's input
			// become input_required answers; a retry continues the call.
			if req.Params.RequestState != "" || len(req.Params.InputResponses) > 0 {
				return p.continueCall(ctx, e, host, req, args)
			}
			return p.modernCall(ctx, host, e.Name, args, run)
		}
		return run(ctx)
	}
}

// toolAnswer is the pipeline's result of a tool call in MCP terms.
func (p *Proxy) toolAnswer(ctx context.Context, e gate.ExposedTool, res gate.Result) (*mcp.CallToolResult, error) {
	switch res.Status {
	case gate.Done:
		out, err := hostResult(res.Res)
		if err != nil {
			p.log.Warn("upstream result refused", "id", res.CallID, "tool", e.Name, "err", err)
			return mcp.NewToolResultError(fmt.Sprintf("mcp-guard: %s returned a result mcp-guard cannot read: %v (ledger call %d)", e.Name, err, res.CallID)), nil
		}
		p.depositFrom(ctx, e.Server, res.Res) // the host gets the server's own bytes
		return out, nil
	case gate.Failed:
		return nil, p.serverFailure(ctx, hostFailure(e.Name, res.CallID, res.Err))
	case gate.Cancelled:
		return nil, errors.New(res.Message)
	}
	return mcp.NewToolResultError(res.Message), nil
}

// forward sends a recorded, allowed call upstream, relaying its progress
// to the host, and returns the upstream's raw result.
func (p *Proxy) forward(ctx context.Context, meta *mcp.Meta, e gate.ExposedTool, args json.RawMessage, id int64, late func(json.RawMessage, error)) (json.RawMessage, error) {
	u := p.upstream(e.Server)
	if u == nil {
		p.log.Warn("call not forwarded", "id", id, "tool", e.Name)
		return nil, p.notConnectedErr(e.Server)
	}
	var relay *progressRelay
	var onProgress func(json.RawMessage)
	if meta != nil && meta.ProgressToken != nil {
		relay = p.newProgressRelay(ctx, meta.ProgressToken)
		onProgress = relay.offer
	}
	done := u.callers.add(ctx) // a sampling or elicitation request it makes now goes to this host
	res, err := u.CallTool(ctx, e.Tool.Name, args, onProgress, late)
	done()
	if relay != nil {
		// The latest progress goes to the host before the result.
		if passed, dropped, refused := relay.finish(); dropped+refused > 0 {
			p.log.Info("upstream progress notifications left out", "id", id, "tool", e.Name,
				"passed", passed, "coalesced", dropped, "refused", refused)
		}
	}
	return res, err
}

// notConnectedErr is the failure of a request to a server that is not
// connected now: the ledger and the log get why, the host fixed words.
func (p *Proxy) notConnectedErr(server string) error {
	return &up.EndedError{
		Err:  fmt.Errorf("upstream %q is not connected (%v); mcp-guard is connecting it again", server, p.Failed()[server]),
		Host: hostReason(notConnected(server)),
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
	if out, ok := hostResultFast(raw); ok {
		return out, nil
	}
	return hostResultJSON(raw)
}

// hostResultJSON is hostResult as encoding/json reads raw.
func hostResultJSON(raw json.RawMessage) (*mcp.CallToolResult, error) {
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

// hostResultFast is hostResult in one pass over raw, for a result
// canon.Members reads plainly: content an array, isError a boolean or
// null, _meta an object or null. It reports false for anything else,
// which hostResult reads as it always did. A file read whole comes back in
// a result: encoding/json scans it twice, and copies each content item.
// The result is raw's: its parts are slices of raw.
func hostResultFast(raw []byte) (*mcp.CallToolResult, bool) {
	v, ok := canon.Members(raw, "content", "structuredContent", "isError", "_meta")
	if !ok {
		return nil, false
	}
	content, ok := canon.Elements(v[0])
	if !ok {
		return nil, false
	}
	out := &mcp.CallToolResult{Content: make([]mcp.Content, 0, len(content))}
	switch string(v[2]) {
	case "true":
		out.IsError = true
	case "false", "null", "":
	default:
		return nil, false
	}
	for _, c := range content {
		out.Content = append(out.Content, rawContent{raw: c})
	}
	if len(v[1]) > 0 && string(v[1]) != "null" {
		out.RawStructuredContent = json.RawMessage(v[1])
	}
	switch {
	case len(v[3]) == 0 || string(v[3]) == "null":
	case v[3][0] == '{':
		names, values, ok := canon.Fields(v[3])
		if !ok {
			return nil, false
		}
		if len(names) > 0 {
			fields := make(map[string]any, len(names))
			for i, n := range names {
				fields[n] = json.RawMessage(values[i])
			}
			out.Meta = &mcp.Meta{AdditionalFields: fields}
		}
	default:
		return nil, false
	}
	return out, true
}

// hostElicits reports whether the host of ctx's request can be sent an
// elicitation form: a 2026-07-28 request that declares the capability (the
// host is asked in the call's answer), or an earlier session whose host
// declared it at initialize.
func hostElicits(ctx context.Context) bool {
	if info := server.RequestProtocolInfoFromContext(ctx); info != nil && info.Modern {
		return info.ClientCapabilities != nil && info.ClientCapabilities.Elicitation != nil
	}
	ci, ok := server.ClientSessionFromContext(ctx).(server.SessionWithClientInfo)
	return ok && ci.GetClientCapabilities().Elicitation != nil
}
