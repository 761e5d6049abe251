package upstream

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/mcp-guard/mcp-guard/internal/canon"
)

// message is one JSON-RPC 2.0 message with every payload kept raw.
type message struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id,omitempty"`
	Method  string          `json:"method,omitempty"`
	Params  json.RawMessage `json:"params,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   *RPCError       `json:"error,omitempty"`

	err error // set by the transport: the request failed before an answer came
}

// readMessage reads line into a message as encoding/json.Unmarshal does.
// A message canon.Members reads plainly (no error member; jsonrpc and
// method strings or null) is read in one pass over one copy of line, of
// which its raw members are slices: a tool's result may be megabytes,
// which encoding/json scans twice and copies. Anything else is read by
// encoding/json.
func readMessage(line []byte) (message, error) {
	own := bytes.Clone(line) // line's buffer is the reader's, and reused
	if v, ok := canon.Members(own, "jsonrpc", "id", "method", "params", "result", "error"); ok && v[5] == nil {
		m := message{ID: v[1], Params: v[3], Result: v[4]}
		if plainString(v[0], &m.JSONRPC) && plainString(v[2], &m.Method) {
			return m, nil
		}
	}
	var m message
	err := json.Unmarshal(own, &m)
	return m, err
}

// plainString sets *dst to the JSON string raw (absent or null: left as
// it is, as encoding/json leaves it); false if raw is another kind.
func plainString(raw []byte, dst *string) bool {
	switch {
	case raw == nil || string(raw) == "null":
		return true
	case raw[0] != '"':
		return false
	}
	return json.Unmarshal(raw, dst) == nil
}

func (m *message) isRequest() bool      { return m.Method != "" && len(m.ID) > 0 }
func (m *message) isNotification() bool { return m.Method != "" && len(m.ID) == 0 }

// RPCError is a JSON-RPC error object as a peer sent it.
type RPCError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`

	// Raw is the error object's bytes as the peer sent them (nil for an
	// error mcp-guard made), so that it can be passed on as it was.
	Raw json.RawMessage `json:"-"`
}

// UnmarshalJSON reads an error object and keeps its bytes in Raw.
func (e *RPCError) UnmarshalJSON(b []byte) error {
	type plain RPCError
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*e = RPCError(p)
	e.Raw = append(json.RawMessage(nil), b...)
	return nil
}

func (e *RPCError) Error() string {
	return fmt.Sprintf("JSON-RPC error %d: %s", e.Code, e.Message)
}

// JSON-RPC and MCP error codes mcp-guard uses.
const (
	codeMethodNotFound = -32601
	codeInternal       = -32603
)

// encodeRequest builds a request line from raw params without re-encoding
// them: the bytes in params are the bytes that go out.
func encodeRequest(id string, method string, params json.RawMessage) []byte {
	var b bytes.Buffer
	b.WriteString(`{"jsonrpc":"2.0","id":`)
	b.WriteString(strconv.Quote(id))
	b.WriteString(`,"method":`)
	writeJSONString(&b, method)
	if len(params) > 0 {
		b.WriteString(`,"params":`)
		b.Write(params)
	}
	b.WriteString("}\n")
	return b.Bytes()
}

func encodeNotification(method string, params json.RawMessage) []byte {
	var b bytes.Buffer
	b.WriteString(`{"jsonrpc":"2.0","method":`)
	writeJSONString(&b, method)
	if len(params) > 0 {
		b.WriteString(`,"params":`)
		b.Write(params)
	}
	b.WriteString("}\n")
	return b.Bytes()
}

func encodeResult(id json.RawMessage, result json.RawMessage) []byte {
	var b bytes.Buffer
	b.WriteString(`{"jsonrpc":"2.0","id":`)
	b.Write(id)
	b.WriteString(`,"result":`)
	b.Write(result)
	b.WriteString("}\n")
	return b.Bytes()
}

func encodeError(id json.RawMessage, code int, msg string) []byte {
	var b bytes.Buffer
	b.WriteString(`{"jsonrpc":"2.0","id":`)
	b.Write(id)
	b.WriteString(`,"error":{"code":`)
	b.WriteString(strconv.Itoa(code))
	b.WriteString(`,"message":`)
	writeJSONString(&b, msg)
	b.WriteString("}}\n")
	return b.Bytes()
}

// writeJSONString writes s as a JSON string without HTML escaping.
func writeJSONString(b *bytes.Buffer, s string) {
	enc := json.NewEncoder(b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a Go string always encodes
	b.Truncate(b.Len() - 1)
}

// jsonString returns s encoded as a JSON string without HTML escaping.
func jsonString(s string) json.RawMessage {
	var b bytes.Buffer
	writeJSONString(&b, s)
	return b.Bytes()
}
