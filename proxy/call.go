package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-guard/mcp-guard/gate"
	"github.com/mcp-guard/mcp-guard/internal/canon"
	up "github.com/mcp-guard/mcp-guard/upstream"
)

// recordTimeout bounds a ledger write made on behalf of a request.
const recordTimeout = gate.RecordTimeout

// callTool is the one tools/call handler: it runs the call of exposed tool
// e through the gate's pipeline (decided, committed to the ledger, held
// for the operator when a rule asks, and only then forwarded, with the
// argument bytes that were checked and recorded) and returns what the host
// is answered with: the server's own result bytes, or mcp-guard's tool
// error result, or why the request failed.
func (p *Proxy) callTool(ctx context.Context, e gate.ExposedTool, req mcp.CallToolRequest) (json.RawMessage, error) {
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
	meta := req.Params.Meta
	r := gate.Request{
		Kind:      gate.KindTool,
		Session:   host.gate,
		SessionID: host.lease.ID(),
		Scope:     host.scope,
		Server:    e.Server,
		Name:      e.Tool.Name,
		Exposed:   e.Name,
		PinDigest: e.Tool.Digest(),
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
			b, _ := json.Marshal(map[string]any{
				"progressToken": token, "progress": n,
				"message": fmt.Sprintf("waiting for the operator to approve the call (mcp-guard approve %d)", apID),
			})
			_ = notifyHost(ctx, "notifications/progress", b)
		}
	}
	run := func(ctx context.Context) (json.RawMessage, error) {
		var relay *progressRelay
		if meta != nil && meta.ProgressToken != nil {
			relay = p.newProgressRelay(ctx, meta.ProgressToken)
			r.OnProgress = relay.offer
		}
		// A sampling or elicitation request the server makes while it
		// serves the call goes to this host.
		res := p.pipe.Run(relayable(ctx), &r, nil)
		if relay != nil {
			// The latest progress goes to the host before the result.
			if passed, dropped, refused := relay.finish(); dropped+refused > 0 {
				p.log.Info("upstream progress notifications left out", "id", res.CallID, "tool", e.Name,
					"passed", passed, "coalesced", dropped, "refused", refused)
			}
		}
		return p.toolAnswer(e, res)
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

// callToolRecovered is callTool with a panic turned into an error, as
// mcp-go's WithRecovery did.
func (p *Proxy) callToolRecovered(ctx context.Context, e gate.ExposedTool, req mcp.CallToolRequest) (res json.RawMessage, err error) {
	defer func() {
		if r := recover(); r != nil {
			res, err = nil, fmt.Errorf("panic recovered in %s tool handler: %v", req.Params.Name, r)
		}
	}()
	return p.callTool(ctx, e, req)
}

// toolsCall answers tools/call (methods.go): a call of a tool the host is
// shown goes to callTool; one of any other name, or one whose params do
// not read, is refused and recorded, nothing forwarded.
func (p *Proxy) toolsCall(ctx context.Context, r *hostRequest) (json.RawMessage, error) {
	var req mcp.CallToolRequest
	req.Method = string(mcp.MethodToolsCall)
	if len(r.Params) > 0 && string(r.Params) != "null" {
		if err := json.Unmarshal(r.Params, &req.Params); err != nil {
			p.recordUnreadable(ctx, r.Params, err)
			return nil, &rpcError{mcp.INVALID_PARAMS, "invalid tools/call params: " + err.Error()}
		}
	}
	e, ok := p.current(req.Params.Name)
	if !ok {
		p.recordRefused(ctx, req.Params.Name, req.Params.RawArguments, nil)
		return nil, &rpcError{mcp.INVALID_PARAMS, fmt.Sprintf("tool %q not found: mcp-guard shows no tool of that name", req.Params.Name)}
	}
	return p.callToolRecovered(ctx, e, req)
}

// toolAnswer is the pipeline's result of a tool call as the host gets it.
func (p *Proxy) toolAnswer(e gate.ExposedTool, res gate.Result) (json.RawMessage, error) {
	switch res.Status {
	case gate.Done:
		if err := readableToolResult(res.Res); err != nil {
			p.log.Warn("upstream result refused", "id", res.CallID, "tool", e.Name, "err", err)
			return toolError(fmt.Sprintf("mcp-guard: %s returned a result mcp-guard cannot read: %v (ledger call %d)", e.Name, err, res.CallID))
		}
		return p.fromServer(e.Server, res.Res), nil // the host gets the server's own bytes
	case gate.Failed:
		return nil, hostFailure(e.Name, res.CallID, res.Err)
	case gate.Cancelled:
		return nil, errors.New(res.Message)
	}
	return toolError(res.Message)
}

// toolError is a tool result that says msg, as an error (isError).
func toolError(msg string) (json.RawMessage, error) {
	return json.Marshal(mcp.NewToolResultError(msg))
}

// Upstream is the server of that name as it is connected now, the one the
// gate's pipeline forwards a decided request to (gate.Upstreams).
func (s servers) Upstream(name string) (gate.Upstream, error) {
	u := s.p.upstream(name)
	if u == nil {
		return nil, s.p.notConnectedErr(name)
	}
	return u.Client, nil
}

// servers are the proxy's connected upstreams, as the gate's pipeline
// reaches them.
type servers struct{ p *Proxy }

// notConnectedErr is the failure of a request to a server that is not
// connected now: the ledger and the log get why, the host fixed words.
func (p *Proxy) notConnectedErr(server string) error {
	return &up.EndedError{
		Err:  fmt.Errorf("upstream %q is not connected (%v); mcp-guard is connecting it again", server, p.Failed()[server]),
		Host: hostReason(notConnected(server)),
	}
}

// readableToolResult reports why raw, an upstream's tools/call result, is
// not one a host can read: it needs a "content" array, isError (if any) a
// boolean and _meta (if any) an object.
func readableToolResult(raw json.RawMessage) error {
	if plainToolResult(raw) {
		return nil
	}
	return jsonToolResult(raw)
}

// jsonToolResult is readableToolResult as encoding/json reads raw.
func jsonToolResult(raw json.RawMessage) error {
	var r struct {
		Content           *[]json.RawMessage         `json:"content"`
		StructuredContent json.RawMessage            `json:"structuredContent"`
		IsError           bool                       `json:"isError"`
		Meta              map[string]json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return err
	}
	if r.Content == nil {
		return errors.New(`no "content" array`)
	}
	return nil
}

// plainToolResult is readableToolResult in one pass over raw, for a result
// canon.Members reads plainly: content an array, isError a boolean or
// null, _meta an object or null. It reports false for anything else, which
// jsonToolResult reads instead. A file read whole comes back in a result:
// encoding/json would scan it twice.
func plainToolResult(raw []byte) bool {
	v, ok := canon.Members(raw, "content", "structuredContent", "isError", "_meta")
	if !ok {
		return false
	}
	if _, ok := canon.Elements(v[0]); !ok {
		return false
	}
	switch string(v[2]) {
	case "true", "false", "null", "":
	default:
		return false
	}
	switch {
	case len(v[3]) == 0 || string(v[3]) == "null":
	case v[3][0] == '{':
		if _, _, ok := canon.Fields(v[3]); !ok {
			return false
		}
	default:
		return false
	}
	return true
}

// hostElicits reports whether the host of ctx's request can be sent an
// elicitation form: a 2026-07-28 request that declares the capability (the
// host is asked in the call's answer), or an earlier session whose host
// declared it at initialize.
func hostElicits(ctx context.Context) bool {
	if caps, ok := ctx.Value(modernKey{}).(*mcp.ClientCapabilities); ok {
		return caps.Elicitation != nil
	}
	c := connOf(ctx)
	return c != nil && c.peer().clientCaps().Elicitation != nil
}
