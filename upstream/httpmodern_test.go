package upstream

import (
	"encoding/json"
	"testing"
)

// A 2026-07-28 request travels with its version, method and name headers,
// and the Mcp-Param-* its tool's x-mcp-header asks for; a legacy request
// with none; a notification to a server known to be modern with its
// method.
func TestModernHeaders_FromTheMessage(t *testing.T) {
	schema := func(tool string) json.RawMessage {
		if tool == "region" {
			return json.RawMessage(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}`)
		}
		return nil
	}
	call := []byte(`{"jsonrpc":"2.0","id":"g-1","method":"tools/call","params":{"name":"region","arguments":{"region":"eu west ü"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`)
	h, ok := modernHeaders(call, false, schema)
	if !ok || h.Get("Mcp-Protocol-Version") != ProtocolModern || h.Get("Mcp-Method") != "tools/call" || h.Get("Mcp-Name") != "region" ||
		h.Get("Mcp-Param-Region") != "=?base64?ZXUgd2VzdCDDvA==?=" {
		t.Fatalf("tools/call: %v %v", ok, h)
	}
	legacy := []byte(`{"jsonrpc":"2.0","id":"g-1","method":"tools/call","params":{"name":"region","arguments":{"region":"x"}}}`)
	if h, ok := modernHeaders(legacy, false, schema); ok || h != nil {
		t.Fatalf("legacy request: %v %v", ok, h)
	}
	note := []byte(`{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`)
	if h, ok := modernHeaders(note, true, schema); !ok || h.Get("Mcp-Method") != "notifications/roots/list_changed" || h.Get("Mcp-Name") != "" {
		t.Fatalf("notification: %v %v", ok, h)
	}
	if cancelledRequest([]byte(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"g-7"}}`)) != "g-7" {
		t.Fatal("cancelled request ID not read")
	}
}
