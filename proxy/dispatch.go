package proxy

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// What both host transports share once a message is read: a plain
// tools/call served by the fast path (fastTool, fastAnswer), anything else
// dispatched by mcp-go's server (dispatch).

// fastTool is the tool a plain call names, if the fast path may serve it:
// registered, and not a task tool (mcp-go answers "not found", and the
// call is recorded; it sees to tasks).
func (p *Proxy) fastTool(c fastCall) (*server.ServerTool, bool) {
	tool := p.srv.GetTool(c.req.Params.Name)
	return tool, tool != nil && tool.Tool.Execution == nil
}

// fastContext is ctx for the plain call rk, cancellable by the host from
// now on, and the func that ends it.
func (p *Proxy) fastContext(ctx context.Context, rk reqKey) (context.Context, func()) {
	return p.cancels.cancellable(context.WithValue(ctx, fastKeyKey{}, rk), &rk)
}

// fastAnswer runs a plain call's tool handler under ctx (fastContext's)
// and returns its answer line; answered is false when the host cancelled
// the call, which then gets no answer (MCP).
func (p *Proxy) fastAnswer(ctx context.Context, tool *server.ServerTool, c fastCall, rk reqKey) (line []byte, answered bool) {
	res, err := callRecovered(ctx, tool.Handler, c.req)
	raw, _, _ := p.results.take(rk) // an error object is in err too
	if cancelledByHost(ctx) {
		return nil, false
	}
	return p.answerLine(c.id, res, err, raw), true
}

// dispatch is mcp-go's server's answer to msg (nil for a notification), a
// panic in a handler turned into an internal error for a request.
func (p *Proxy) dispatch(ctx context.Context, id json.RawMessage, msg []byte) (res mcp.JSONRPCMessage) {
	defer func() {
		if r := recover(); r != nil {
			p.log.Error("panic recovered in a host request's handler", "panic", r)
			res = nil
			if len(id) > 0 && string(id) != "null" {
				var rid any
				_ = json.Unmarshal(id, &rid)
				res = mcp.NewJSONRPCError(mcp.NewRequestId(rid), mcp.INTERNAL_ERROR, fmt.Sprintf("internal panic: %v", r), nil)
			}
		}
	}()
	return p.srv.HandleMessage(ctx, msg)
}
