package proxy

import (
	"bytes"
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcp-guard/mcp-guard/internal/canon"
)

// The stdio host's read loop answers the list requests and
// completion/complete itself, with the servers' own bytes (hostraw.go),
// once the session is initialized. A request of another era (2026-07-28
// _meta), with a cursor, or otherwise out of the ordinary goes to mcp-go.

// batchRefusal is the answer to a JSON-RPC batch: MCP since 2025-06-18
// has none.
const batchRefusal = "mcp-guard: JSON-RPC batches are not supported in this MCP protocol revision (2025-06-18 and later); send each message on its own"

// isBatch reports whether msg is a JSON array (a JSON-RPC batch).
func isBatch(msg []byte) bool {
	t := bytes.TrimLeft(msg, " \t\r\n")
	return len(t) > 0 && t[0] == '['
}

// batchError is the JSON-RPC error answering a batch.
func batchError() []byte {
	b, _ := json.Marshal(mcp.JSONRPCError{
		JSONRPC: mcp.JSONRPC_VERSION,
		Error:   mcp.NewJSONRPCErrorDetails(mcp.INVALID_REQUEST, batchRefusal, nil),
	})
	return b
}

// refuseBatch answers a batch line with an error saying batches are not
// part of the protocol, and reports whether line was one.
func (h *stdioHost) refuseBatch(line []byte) bool {
	if !isBatch(line) {
		return false
	}
	h.p.log.Warn("host sent a JSON-RPC batch; refused")
	if _, err := h.out.Write(append(batchError(), '\n')); err != nil {
		h.p.log.Debug("answer not delivered to host", "err", err)
	}
	return true
}

// plainRequest is a request the read loop may answer itself.
type plainRequest struct {
	id     json.RawMessage
	method string
	params json.RawMessage
}

// parsePlainRequest reads line as a JSON-RPC request that reads the same
// to encoding/json (mcp-go) as to mcp-guard: unique, exact member names,
// a string or number id, and params that carry no newer protocol's _meta.
func parsePlainRequest(line []byte) (plainRequest, bool) {
	if !canon.Unique(line) || !exactNames(line, "jsonrpc", "id", "method", "params", "result", "error") {
		return plainRequest{}, false
	}
	var m struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  string          `json:"method"`
		Params  json.RawMessage `json:"params"`
		Result  json.RawMessage `json:"result"`
		Error   json.RawMessage `json:"error"`
	}
	if json.Unmarshal(line, &m) != nil || m.JSONRPC != mcp.JSONRPC_VERSION || !plainID(m.ID) || m.Result != nil || m.Error != nil {
		return plainRequest{}, false
	}
	if len(m.Params) > 0 && string(m.Params) != "null" {
		meta, ok := member(m.Params, "_meta")
		if ok {
			var mt mcp.Meta
			if json.Unmarshal(meta, &mt) != nil || mt.ProtocolVersion() != "" {
				return plainRequest{}, false // the stateless protocol's request: mcp-go's
			}
		}
	}
	return plainRequest{id: m.ID, method: m.Method, params: m.Params}, true
}

// listParams reports whether a list request's params ask for the whole
// list: no cursor (mcp-go pages nothing, so a host never has one).
func listParams(params json.RawMessage) bool {
	if len(params) == 0 || string(params) == "null" {
		return true
	}
	var ps map[string]json.RawMessage
	if json.Unmarshal(params, &ps) != nil || !exactNames(params, "cursor", "_meta") {
		return false
	}
	for k := range ps {
		if k != "_meta" {
			return false
		}
	}
	return true
}

// answerHere answers line in the read loop if it is a list request or a
// completion/complete of an initialized session, and reports whether it
// did.
func (h *stdioHost) answerHere(line []byte) bool {
	if !bytes.Contains(line, []byte(`/list"`)) && !bytes.Contains(line, []byte(`"completion/complete"`)) {
		return false
	}
	req, ok := parsePlainRequest(line)
	if !ok {
		return false
	}
	sp := h.session.Load()
	if sp == nil {
		return false
	}
	if cs := server.ClientSessionFromContext(*sp); cs == nil || !cs.Initialized() {
		return false
	}
	if key, ok := listKey[req.method]; ok {
		if !listParams(req.params) {
			return false
		}
		items, ok := h.p.hostList(req.method)
		if !ok {
			return false // no view yet: mcp-go answers
		}
		h.writeResult(req.id, []byte(`{"`+key+`":`+string(items)+`}`))
		return true
	}
	if req.method != string(mcp.MethodCompletionComplete) {
		return false
	}
	var ps struct {
		Ref struct {
			Type string `json:"type"`
			Name string `json:"name"`
			URI  string `json:"uri"`
		} `json:"ref"`
		Argument json.RawMessage `json:"argument"`
		Context  json.RawMessage `json:"context"`
	}
	if json.Unmarshal(req.params, &ps) != nil || len(ps.Argument) == 0 || ps.Argument[0] != '{' {
		return false // mcp-go says what is wrong with it
	}
	ref := ps.Ref.Name
	if ps.Ref.Type == "ref/resource" {
		ref = ps.Ref.URI
	}
	key, ok := rawIDKey(req.id)
	if !ok {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped {
		return true // the session is over: nobody reads an answer
	}
	ctx, done := h.p.cancels.cancellable(*sp, &reqKey{session: "stdio", id: key})
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		defer done()
		res, err := h.p.completeRaw(ctx, ps.Ref.Type, ref, ps.Argument, ps.Context)
		if cancelledByHost(ctx) {
			return
		}
		if err != nil {
			h.answer(req.id, nil, err)
			return
		}
		h.writeResult(req.id, res)
	}()
	return true
}

// writeResult writes the response {"jsonrpc":"2.0","id":id,"result":result}.
func (h *stdioHost) writeResult(id, result json.RawMessage) {
	one, _, err := oneLine(result)
	if err != nil {
		h.answer(id, nil, err)
		return
	}
	b := make([]byte, 0, len(one)+len(id)+40)
	b = append(b, `{"jsonrpc":"2.0","id":`...)
	b = append(b, id...)
	b = append(b, `,"result":`...)
	b = append(b, one...)
	b = append(b, "}\n"...)
	if _, err := h.out.Write(b); err != nil {
		h.p.log.Debug("answer not delivered to host", "err", err)
	}
}
