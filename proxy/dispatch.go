package proxy

import (
	"context"
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-guard/mcp-guard/gate"
)

// What both host transports share once a message is read: a plain
// tools/call served by the fast path (fastContext, fastAnswer), a request
// of any other method (methods.go), anything else (other).

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

// answer is the answer to msg, a host's message other than a plain call
// the fast path serves or an answer to mcp-guard's own request:
// mcp-guard's own (methods.go), or what other says. code is its error's, 0
// for a result; line is nil when the host cancelled the request. answered
// is false for a message that gets no answer (a notification).
func (p *Proxy) answer(ctx context.Context, msg []byte) (line []byte, code int, answered bool) {
	if line, code, ok := p.answerOwn(ctx, msg); ok {
		return line, code, true
	}
	line, code = other(msg)
	return line, code, line != nil
}

// other is the answer to msg, a host's message no method handler takes,
// and its error code: nothing for a notification or for an answer to no
// request; a parse error for a line that is not one JSON object; an
// invalid request for a request that names no method, or whose id is
// neither a string nor a number (under id null: it cannot be echoed).
func other(msg []byte) (line []byte, code int) {
	var m map[string]json.RawMessage
	if json.Unmarshal(msg, &m) != nil || m == nil {
		return errorLine(json.RawMessage("null"), &rpcError{mcp.PARSE_ERROR, "Parse error: the message is not one JSON object"}), mcp.PARSE_ERROR
	}
	id, hasID := m["id"]
	_, result := m["result"]
	_, failed := m["error"]
	if !hasID || string(id) == "null" || result || failed {
		return nil, 0
	}
	if !plainID(id) {
		id = json.RawMessage("null")
	}
	return errorLine(id, &rpcError{mcp.INVALID_REQUEST, "Invalid Request: a request needs jsonrpc \"2.0\", a method, and an id that is a string or a number"}), mcp.INVALID_REQUEST
}
