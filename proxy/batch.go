package proxy

// MCP has no JSON-RPC batches since 2025-06-18: both host transports
// answer one with an error that says so (httppost.go for HTTP).

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
