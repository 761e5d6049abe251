package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
)

// The requests mcp-guard answers itself, one handler per method, on both
// host transports: the answer is built from the servers' own bytes, never
// decoded into mcp-go's types and encoded again. A method mcp-guard does
// not offer is refused (notOffered); any other message is dispatch.go's.

// hostRequest is a host's request as it is read, once, by encoding/json:
// the handlers and the fast path's fallback reader (readFastCall) read a
// message alike, so they agree on which request it is.
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

// methodHandler answers one request: its result, or why not (an
// *rpcError, a *hostError, or any other error: -32603 with its text).
type methodHandler func(ctx context.Context, r *hostRequest) (json.RawMessage, error)

// ownMethod is the handler of method: a request of no method has none.
func (p *Proxy) ownMethod(method string) (methodHandler, bool) {
	switch method {
	case "tools/list", "prompts/list", "resources/list", "resources/templates/list":
		return p.listMethod, true
	case "prompts/get":
		return p.promptGet, true
	case "resources/read":
		return p.resourceRead, true
	case "completion/complete":
		return p.complete, true
	case "resources/subscribe":
		return p.resourcesSubscribe, true
	case "resources/unsubscribe":
		return p.resourcesUnsubscribe, true
	case "subscriptions/listen":
		return p.subscriptionsListen, true
	case "tools/call":
		return p.toolsCall, true
	case "ping":
		return p.ping, true
	case "initialize":
		return p.initialize, true
	case "server/discover":
		return p.discover, true
	case "logging/setLevel":
		return p.setLevel, true
	case "":
		return nil, false
	}
	return notOffered, true
}

// notOffered answers a request of a method mcp-guard does not offer (tasks
// among them: its hosts run every call as a plain call).
func notOffered(_ context.Context, r *hostRequest) (json.RawMessage, error) {
	return nil, &rpcError{mcp.METHOD_NOT_FOUND, fmt.Sprintf("Method %s not found: mcp-guard does not offer it", r.Method)}
}

// ownRequest reads msg as a request: ok is false for any other message
// (dispatch.go other).
func (p *Proxy) ownRequest(msg []byte) (r *hostRequest, ok bool) {
	r = new(hostRequest)
	if json.Unmarshal(msg, r) != nil || r.Result != nil || r.Error != nil || !plainID(r.ID) {
		return nil, false
	}
	if _, ok := p.ownMethod(r.Method); !ok {
		return nil, false
	}
	return r, true
}

// answerOwn answers msg if it is a request mcp-guard answers itself: the
// answer's line, and the error's code (0 for a result). ok is false for
// any other message (dispatch.go other). line is nil when the
// host cancelled the request, which then gets no answer (MCP).
func (p *Proxy) answerOwn(ctx context.Context, msg []byte) (line []byte, code int, ok bool) {
	r, ok := p.ownRequest(msg)
	if !ok {
		return nil, 0, false
	}
	line, code = p.serveOwn(ctx, r, msg)
	return line, code, true
}

// serveOwn answers r, read from msg, under ctx: cancellable by the host
// from now on, and of the protocol revision its _meta names.
func (p *Proxy) serveOwn(ctx context.Context, r *hostRequest, msg []byte) (line []byte, code int) {
	handle, _ := p.ownMethod(r.Method)
	if r.JSONRPC != mcp.JSONRPC_VERSION {
		return errorLine(r.ID, &rpcError{mcp.INVALID_REQUEST, `Invalid Request: "jsonrpc" must be "2.0"`}), mcp.INVALID_REQUEST
	}
	caps, refused, code := r.readEra(msg)
	if refused != nil {
		return refused, code
	}
	if r.modern {
		// What the handshake would have told of the host (its
		// capabilities), kept for a stateless request; the connection is
		// as one initialized (it is sent notifications).
		ctx = context.WithValue(ctx, modernKey{}, caps)
		if c := connOf(ctx); c != nil {
			hp := c.peer()
			hp.markInitialized()
			hp.stateless.Store(true)
			hp.setClientCaps(*caps)
		}
	}
	if key, ok := rawIDKey(r.ID); ok {
		var done func()
		ctx, done = p.cancels.cancellable(ctx, &reqKey{session: sessionID(ctx), id: key})
		defer done()
	}
	res, err := recovered(ctx, handle, r)
	if cancelledByHost(ctx) {
		return nil, 0
	}
	if err != nil {
		return p.errorAnswer(r.ID, err)
	}
	if r.modern {
		res = p.modernResult(res, r.Method)
	}
	return p.resultLine(r.ID, res), 0
}

// resultLine is the answer to the request id with result res, on one line.
func (p *Proxy) resultLine(id, res json.RawMessage) []byte {
	one, _, err := oneLine(res)
	if err != nil {
		p.log.Error("a result for the host is not JSON; it gets an error", "err", err)
		line, _ := p.errorAnswer(id, &rpcError{mcp.INTERNAL_ERROR, "mcp-guard: the result could not be encoded"})
		return line
	}
	b := make([]byte, 0, len(one)+len(id)+40)
	b = append(append(append(b, `{"jsonrpc":"2.0","id":`...), id...), `,"result":`...)
	return append(append(b, one...), '}')
}

// recovered is handle's answer to r, a panic in it turned into an error
// (the session goes on).
func recovered(ctx context.Context, handle methodHandler, r *hostRequest) (res json.RawMessage, err error) {
	defer func() {
		if v := recover(); v != nil {
			res, err = nil, fmt.Errorf("mcp-guard: internal error serving %s: %v", r.Method, v)
		}
	}()
	return handle(ctx, r)
}

// errorAnswer is the error answer to the request id that failed with err,
// and its code: the server's own error object where it may pass
// (servererr.go), else mcp-guard's words.
func (p *Proxy) errorAnswer(id json.RawMessage, err error) ([]byte, int) {
	var (
		re       *rpcError
		he       *hostError
		required mcp.URLElicitationRequiredError
	)
	switch {
	case errors.As(err, &re):
	case errors.As(err, &he) && he.server != nil:
		var obj struct {
			Code int `json:"code"`
		}
		_ = json.Unmarshal(he.server, &obj)
		b := append([]byte(`{"jsonrpc":"2.0","id":`), id...)
		b = append(append(b, `,"error":`...), he.server...)
		return append(b, '}'), obj.Code
	case errors.As(err, &required):
		d := required.JSONRPCError().Error
		b, _ := json.Marshal(reply{JSONRPC: mcp.JSONRPC_VERSION, ID: id, Error: &d})
		return b, d.Code
	default:
		re = &rpcError{mcp.INTERNAL_ERROR, err.Error()}
	}
	return errorLine(id, re), re.code
}

// modernKey is the context key of a 2026-07-28 request's client
// capabilities, which its _meta carries in place of the handshake's.
type modernKey struct{}

// modernHost reports whether ctx serves a request of the stateless
// protocol (2026-07-28 or later).
func modernHost(ctx context.Context) bool {
	_, ok := ctx.Value(modernKey{}).(*mcp.ClientCapabilities)
	return ok
}

// readEra reads of msg, as mcp-go's server reads it, the protocol
// revision r is of (r.modern) and, of a 2026-07-28 request, the client
// capabilities its _meta names. refused is the error answer (and its
// code) of a request that names 2026-07-28 or later but not a revision
// mcp-guard speaks, or lacks the client's capabilities.
func (r *hostRequest) readEra(msg []byte) (caps *mcp.ClientCapabilities, refused []byte, code int) {
	var w struct {
		Params struct {
			Meta *mcp.Meta `json:"_meta"`
		} `json:"params"`
	}
	if json.Unmarshal(msg, &w) != nil {
		return nil, nil, 0
	}
	meta := w.Params.Meta
	version := meta.ProtocolVersion()
	if !mcp.IsModernProtocol(version) {
		return nil, nil, 0
	}
	r.modern = true
	if !mcp.IsValidProtocolVersion(version) {
		res := mcp.UnsupportedProtocolVersionError{Version: version, Supported: mcp.ValidProtocolVersions}.JSONRPCError()
		var id any
		_ = json.Unmarshal(r.ID, &id)
		res.ID = mcp.NewRequestId(id)
		b, _ := json.Marshal(res)
		return nil, b, res.Error.Code
	}
	if caps = meta.ClientCapabilities(); caps == nil {
		return nil, errorLine(r.ID, &rpcError{mcp.INVALID_PARAMS, "missing or invalid _meta field " + mcp.MetaKeyClientCapabilities}), mcp.INVALID_PARAMS
	}
	return caps, nil, 0
}

// readParams reads r's params into v (a pointer to a struct) as mcp-go's
// server would: absent or null params are none.
func readParams(r *hostRequest, v any) error {
	if len(r.Params) == 0 || string(r.Params) == "null" {
		return nil
	}
	err := json.Unmarshal(r.Params, v)
	var ute *json.UnmarshalTypeError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ute) && ute.Field == "":
		err = errors.New("params must be a JSON object")
	case errors.As(err, &ute):
		err = fmt.Errorf("%q is a JSON %s, not a %s", ute.Field, ute.Value, jsonKind(ute.Type))
	}
	return &rpcError{mcp.INVALID_PARAMS, fmt.Sprintf("invalid %s params: %v", r.Method, err)}
}

// jsonKind names the JSON value a Go type is read from.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Map, reflect.Struct:
		return "object"
	case reflect.Slice, reflect.Array:
		return "array"
	}
	return "number"
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
// resultType (complete, unless res says, as input_required does),
// mcp-guard named as the server in _meta, and for a list or a read the
// caching hints (none: what the host is shown may change with any pin
// decision, and mcp-guard decides each read per host).
func (p *Proxy) modernResult(res json.RawMessage, method string) json.RawMessage {
	info := p.serverInfo()
	var head []string
	if meta, ok := member(res, "_meta"); ok {
		if m, ok := setMember(meta, serverInfoMeta, info); ok {
			res, _ = replaceMember(res, "_meta", m)
		}
	} else {
		head = append(head, `"_meta":{"`+serverInfoMeta+`":`+string(info)+`}`)
	}
	if _, ok := member(res, "resultType"); !ok {
		head = append(head, `"resultType":"complete"`)
	}
	if _, list := listKey[method]; list || method == "resources/read" || method == "server/discover" {
		res = removeMember(removeMember(res, "ttlMs"), "cacheScope") // the server's own do not stand
		head = append(head, `"ttlMs":0,"cacheScope":"private"`)
	}
	var b bytes.Buffer
	b.WriteByte('{')
	b.WriteString(strings.Join(head, ","))
	inner := bytes.TrimSpace(res)
	if len(inner) >= 2 && inner[0] == '{' {
		if body := bytes.TrimSpace(inner[1 : len(inner)-1]); len(body) > 0 {
			if len(head) > 0 {
				b.WriteByte(',')
			}
			b.Write(body)
		}
	}
	b.WriteByte('}')
	return b.Bytes()
}

// listMethod answers one of the four lists: every item the host is shown,
// in one page, as its server listed it (hostraw.go). mcp-guard gives no
// cursor, so a request that brings one is refused.
func (p *Proxy) listMethod(_ context.Context, r *hostRequest) (json.RawMessage, error) {
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

// removed is the error answering a request of a method protocol 2026-07-28
// removed.
func removed(method string) error {
	return &rpcError{mcp.METHOD_NOT_FOUND, fmt.Sprintf("%q was removed in protocol version %s", method, mcp.ProtocolVersion20260728)}
}

// ping answers ping: an empty result.
func (p *Proxy) ping(_ context.Context, r *hostRequest) (json.RawMessage, error) {
	if r.modern {
		return nil, removed(r.Method)
	}
	return json.RawMessage(`{}`), nil
}
