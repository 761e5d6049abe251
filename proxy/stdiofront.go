package proxy

import (
	"bytes"
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"
)

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
