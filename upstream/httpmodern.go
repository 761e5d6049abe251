package upstream

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/mark3labs/mcp-go/mcp"
)

// Protocol 2026-07-28 over streamable HTTP: no session (no Mcp-Session-Id,
// no DELETE), no standalone GET stream, no resumed streams. Every request
// says what it is in headers a gateway can route on (SEP-2243): the
// protocol version, Mcp-Method, Mcp-Name (the tool, prompt or resource it
// names) and, for a tools/call, an Mcp-Param-<Header> for each argument
// the tool's inputSchema marks with x-mcp-header. A request is cancelled
// by ending its HTTP request: there is no session a notifications/cancelled
// could reach.

// modernRequest is what the headers of a 2026-07-28 request are made from.
type modernRequest struct {
	Method string `json:"method"`
	Params struct {
		Meta map[string]json.RawMessage `json:"_meta"`
	} `json:"params"`
}

// modernHeaders reads msg and, when it is a message of the stateless
// protocol (the server is known to speak it, or msg's _meta names
// 2026-07-28), returns the headers it travels with. schema gives a tool's
// inputSchema as last listed (nil when unknown), for its Mcp-Param-*
// headers.
func modernHeaders(msg []byte, known bool, schema func(tool string) json.RawMessage) (http.Header, bool) {
	var r modernRequest
	if json.Unmarshal(msg, &r) != nil || r.Method == "" {
		return nil, false
	}
	var v string
	if !known && (json.Unmarshal(r.Params.Meta["io.modelcontextprotocol/protocolVersion"], &v) != nil || v != ProtocolModern) {
		return nil, false
	}
	var full struct {
		Params json.RawMessage `json:"params"`
	}
	_ = json.Unmarshal(msg, &full)
	h := http.Header{}
	h.Set("MCP-Protocol-Version", ProtocolModern)
	for k, v := range mcp.StandardHeaders(ProtocolModern, mcp.MCPMethod(r.Method), full.Params) {
		h.Set(k, v)
	}
	if r.Method == "tools/call" && schema != nil {
		if name, ok := mcp.ExtractHeaderName(mcp.MethodToolsCall, full.Params); ok {
			if s := schema(name); len(s) > 0 {
				for k, v := range mcp.GenerateParamHeaders(&mcp.Tool{RawInputSchema: s}, full.Params) {
					h.Set(k, v)
				}
			}
		}
	}
	return h, true
}

// cancelledRequest is the request ID a notifications/cancelled names, ""
// when msg is not one.
func cancelledRequest(msg []byte) string {
	var n struct {
		Method string `json:"method"`
		Params struct {
			RequestID json.RawMessage `json:"requestId"`
		} `json:"params"`
	}
	if json.Unmarshal(msg, &n) != nil || n.Method != "notifications/cancelled" {
		return ""
	}
	var id string
	if json.Unmarshal(n.Params.RequestID, &id) != nil {
		return ""
	}
	return id
}

// track registers the cancel func of request id's POST, for a 2026-07-28
// cancellation; the returned func forgets it.
func (t *httpTransport) track(id string, cancel context.CancelFunc) func() {
	t.mu.Lock()
	if t.inflight == nil {
		t.inflight = map[string]context.CancelFunc{}
	}
	t.inflight[id] = cancel
	t.mu.Unlock()
	return func() {
		t.mu.Lock()
		delete(t.inflight, id)
		t.mu.Unlock()
	}
}

// abort ends the POST of request id, if it is in flight: how a client of
// the stateless protocol cancels a request. It reports whether it did.
func (t *httpTransport) abort(id string) bool {
	t.mu.Lock()
	cancel, ok := t.inflight[id]
	t.mu.Unlock()
	if ok {
		cancel()
	}
	return ok
}

// isModern reports whether the server speaks 2026-07-28 (server/discover
// succeeded).
func (t *httpTransport) isModern() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.version == ProtocolModern
}

// toolSchemas reads one tools/list page's tools: name to inputSchema.
func toolSchemas(res json.RawMessage, into map[string]json.RawMessage) {
	var page struct {
		Tools []struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"inputSchema"`
		} `json:"tools"`
	}
	if json.Unmarshal(res, &page) != nil {
		return
	}
	for _, t := range page.Tools {
		into[t.Name] = t.InputSchema
	}
}

// toolSchema is the inputSchema tool had at the server's latest complete
// tools/list (what mcp-guard pinned and exposed), nil when unknown.
func (u *Client) toolSchema(tool string) json.RawMessage {
	u.schemaMu.Lock()
	defer u.schemaMu.Unlock()
	return u.schemas[tool]
}

// isListen reports whether msg is a subscriptions/listen request.
func isListen(msg []byte) bool {
	var r struct {
		Method string `json:"method"`
	}
	return json.Unmarshal(msg, &r) == nil && r.Method == "subscriptions/listen"
}
