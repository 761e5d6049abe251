package proxy

import (
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"
)

// reply is the JSON-RPC response to a fast-path call, with the request's id
// exactly as the host sent it.
type reply struct {
	JSONRPC string                   `json:"jsonrpc"`
	ID      json.RawMessage          `json:"id"`
	Result  *mcp.CallToolResult      `json:"result,omitempty"`
	Error   *mcp.JSONRPCErrorDetails `json:"error,omitempty"`
}
