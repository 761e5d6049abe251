package proxy

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-guard/mcp-guard/gate"
)

// What both host transports share once a message is read: a plain
// tools/call served by the fast path (fastContext, fastAnswer), a request
// mcp-guard answers itself (methods.go), anything else dispatched by
// mcp-go's server (dispatch).

// fastContext is ctx for the plain call rk, cancellable by the host from
// now on, and the func that ends it.
func (p *Proxy) fastContext(ctx context.Context, rk reqKey) (context.Context, func()) {
	return p.cancels.cancellable(ctx, &rk)
}

// fastAnswer runs a plain call of the exposed tool e under ctx
// (fastContext's) and returns its answer line; answered is false when the
// host cancelled the call, which then gets no answer (MCP).
func (p *Proxy) fastAnswer(ctx context.Context, e gate.ExposedTool, c fastCall) (line []byte, answered bool) {
	res, err := p.callToolRecovered(ctx, e, c.req)
	if cancelledByHost(ctx) {
		return nil, false
	}
	if err != nil {
		line, _ = p.errorAnswer(c.id, err)
		return line, true
	}
	return p.resultLine(c.id, res), true
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

// answer is the answer to msg, a host's message other than a plain call
// the fast path serves or an answer to mcp-guard's own request:
// mcp-guard's own (methods.go), or mcp-go's server's for a method not yet
// moved. code is its error's, 0 for a result; line is nil when the host
// cancelled the request. answered is false for a notification.
func (p *Proxy) answer(ctx context.Context, msg []byte) (line []byte, code int, answered bool) {
	if line, code, ok := p.answerOwn(ctx, msg); ok {
		return line, code, true
	}
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	_ = json.Unmarshal(msg, &m)
	res := p.dispatch(ctx, m.ID, msg)
	if res == nil {
		return nil, 0, false
	}
	if failed, ok := res.(mcp.JSONRPCError); ok {
		code = failed.Error.Code
	}
	line, err := json.Marshal(res)
	if err != nil {
		p.log.Error("answer to the host not encodable", "err", err)
		return nil, code, true
	}
	return line, code, true
}
