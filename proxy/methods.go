package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
)

// The requests mcp-guard answers itself, one handler per method, on both
// host transports: the answer is built from the servers' own bytes, never
// decoded into mcp-go's types and encoded again. A request of any other
// method still goes to mcp-go's server (dispatch).

// hostRequest is a host's request as it is read, once, by encoding/json:
// the reader mcp-go's server reads every other request with, so that the
// two agree on which request a message is.
type hostRequest struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Params  json.RawMessage `json:"params"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`

	modern bool // it is of protocol 2026-07-28 (its _meta says so)
}

// rpcError is a JSON-RPC error a method answers with.
type rpcError struct {
	code int
	msg  string
}

func (e *rpcError) Error() string { return e.msg }

// methodHandler answers one request: its result, or an error.
type methodHandler func(ctx context.Context, r *hostRequest) (json.RawMessage, *rpcError)

// ownMethod is the handler mcp-guard answers method with, if it has one.
func (p *Proxy) ownMethod(method string) (methodHandler, bool) {
	switch method {
	case "tools/list", "prompts/list", "resources/list", "resources/templates/list":
		return p.listMethod, true
	}
	return nil, false
}

// answerOwn answers msg if it is a request mcp-guard answers itself: the
// answer's line, and the error's code (0 for a result). ok is false for
// any other message, which mcp-go's server answers.
func (p *Proxy) answerOwn(ctx context.Context, msg []byte) (line []byte, code int, ok bool) {
	var r hostRequest
	if json.Unmarshal(msg, &r) != nil || r.Result != nil || r.Error != nil || !plainID(r.ID) {
		return nil, 0, false
	}
	handle, ok := p.ownMethod(r.Method)
	if !ok {
		return nil, 0, false
	}
	if r.JSONRPC != mcp.JSONRPC_VERSION {
		return errorLine(r.ID, &rpcError{mcp.INVALID_REQUEST, "Invalid JSON-RPC version"}), mcp.INVALID_REQUEST, true
	}
	if e := r.readEra(msg); e != nil {
		return e, mcp.INVALID_PARAMS, true
	}
	res, err := handle(ctx, &r)
	if err != nil {
		return errorLine(r.ID, err), err.code, true
	}
	if r.modern {
		res = p.modernResult(res, r.Method)
	}
	one, _, cerr := oneLine(res)
	if cerr != nil {
		p.log.Error("a result for the host is not JSON; it gets an error", "method", r.Method, "err", cerr)
		e := &rpcError{mcp.INTERNAL_ERROR, "mcp-guard: the result could not be encoded"}
		return errorLine(r.ID, e), e.code, true
	}
	b := make([]byte, 0, len(one)+len(r.ID)+40)
	b = append(append(append(b, `{"jsonrpc":"2.0","id":`...), r.ID...), `,"result":`...)
	return append(append(b, one...), '}'), 0, true
}

// readEra notes whether r is of protocol 2026-07-28, read from msg as
// mcp-go's server reads it. It returns the error answer of a request that
// names that protocol but not one mcp-guard speaks, or lacks the client's
// capabilities.
func (r *hostRequest) readEra(msg []byte) []byte {
	var w struct {
		Params struct {
			Meta *mcp.Meta `json:"_meta"`
		} `json:"params"`
	}
	if json.Unmarshal(msg, &w) != nil {
		return nil
	}
	version := w.Params.Meta.ProtocolVersion()
	if !mcp.IsModernProtocol(version) {
		return nil
	}
	r.modern = true
	if !mcp.IsValidProtocolVersion(version) {
		res := mcp.UnsupportedProtocolVersionError{Version: version, Supported: mcp.ValidProtocolVersions}.JSONRPCError()
		var id any
		_ = json.Unmarshal(r.ID, &id)
		res.ID = mcp.NewRequestId(id)
		b, _ := json.Marshal(res)
		return b
	}
	if w.Params.Meta.ClientCapabilities() == nil {
		return errorLine(r.ID, &rpcError{mcp.INVALID_PARAMS, "missing or invalid _meta field " + mcp.MetaKeyClientCapabilities})
	}
	return nil
}

// errorLine is the JSON-RPC error answering the request id.
func errorLine(id json.RawMessage, e *rpcError) []byte {
	b := append([]byte(`{"jsonrpc":"2.0","id":`), id...)
	b = append(b, `,"error":{"code":`...)
	b = fmt.Appendf(b, "%d", e.code)
	b = append(append(b, `,"message":`...), jsonString(e.msg)...)
	return append(b, "}}"...)
}

// modernResult is res with what a 2026-07-28 result carries: its
// resultType, mcp-guard named as the server in _meta, and for a list the
// caching hints (none: a list may change with any pin decision).
func (p *Proxy) modernResult(res json.RawMessage, method string) json.RawMessage {
	info, _ := json.Marshal(mcp.Implementation{Name: "mcp-guard", Version: p.opts.Version})
	var b bytes.Buffer
	b.WriteString(`{"_meta":{"` + serverInfoMeta + `":`)
	b.Write(info)
	b.WriteString(`},"resultType":"complete"`)
	if _, list := listKey[method]; list {
		b.WriteString(`,"ttlMs":0,"cacheScope":"private"`)
	}
	inner := bytes.TrimSpace(res)
	if len(inner) >= 2 && inner[0] == '{' {
		if body := bytes.TrimSpace(inner[1 : len(inner)-1]); len(body) > 0 {
			b.WriteByte(',')
			b.Write(body)
		}
	}
	b.WriteByte('}')
	return b.Bytes()
}

// listMethod answers one of the four lists: every item the host is shown,
// in one page, as its server listed it (hostraw.go). mcp-guard gives no
// cursor, so a request that brings one is refused.
func (p *Proxy) listMethod(_ context.Context, r *hostRequest) (json.RawMessage, *rpcError) {
	if len(r.Params) > 0 && string(r.Params) != "null" {
		var ps struct {
			Cursor *string `json:"cursor"`
		}
		if err := json.Unmarshal(r.Params, &ps); err != nil {
			return nil, &rpcError{mcp.INVALID_PARAMS, "invalid params: " + err.Error()}
		}
		if ps.Cursor != nil && *ps.Cursor != "" {
			return nil, &rpcError{mcp.INVALID_PARAMS, "invalid cursor: mcp-guard lists everything in one page and gives no cursor"}
		}
	}
	items, ok := p.hostList(r.Method)
	if !ok {
		items = json.RawMessage("[]")
	}
	b := append([]byte(`{`), jsonString(listKey[r.Method])...)
	b = append(append(b, ':'), items...)
	return append(b, '}'), nil
}
