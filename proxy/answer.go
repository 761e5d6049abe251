package proxy

import (
	"encoding/json"
	"errors"

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

// answerLine is the response to a tools/call a fast path served (the stdio
// host's, the HTTP host's), on one line, under the id the host sent: the
// server's own result bytes when the handler left them (raw), otherwise
// res or err as mcp-go would encode them, with the server's own error
// object in place of mcp-go's where there is one (servererr.go).
func (p *Proxy) answerLine(id json.RawMessage, res *mcp.CallToolResult, err error, raw json.RawMessage) []byte {
	if err == nil && raw != nil {
		one, _, cerr := oneLine(raw)
		if cerr == nil {
			b := make([]byte, 0, len(one)+len(id)+40)
			b = append(b, `{"jsonrpc":"2.0","id":`...)
			b = append(b, id...)
			b = append(b, `,"result":`...)
			b = append(b, one...)
			return append(b, '}')
		}
		res, err = nil, cerr
	}
	msg := reply{JSONRPC: mcp.JSONRPC_VERSION, ID: id, Result: res}
	if err != nil {
		details := mcp.NewJSONRPCErrorDetails(mcp.INTERNAL_ERROR, err.Error(), nil)
		var required mcp.URLElicitationRequiredError
		if errors.As(err, &required) {
			details = required.JSONRPCError().Error
		}
		msg.Result, msg.Error = nil, &details
	}
	b, merr := json.Marshal(msg)
	if merr != nil {
		p.log.Error("tool result not encodable; the host gets an error", "err", merr)
		details := mcp.NewJSONRPCErrorDetails(mcp.INTERNAL_ERROR, "mcp-guard: the result could not be encoded", nil)
		b, _ = json.Marshal(reply{JSONRPC: mcp.JSONRPC_VERSION, ID: id, Error: &details})
	} else if he := (*hostError)(nil); errors.As(err, &he) && he.server != nil {
		// the server's own error object, as it wrote it (servererr.go)
		if out, ok := replaceMember(b, "error", he.server); ok {
			b = out
		}
	}
	return b
}
