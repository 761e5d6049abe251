package proxy

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"
)

// FuzzParseFastCall holds the stdio fast path to mcp-go: whatever it accepts,
// mcp-go reads as the same tools/call (name, argument bytes, progress token,
// id), and it accepts the ordinary calls a host sends.
func FuzzParseFastCall(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a__b","arguments":{"x":1}}}`,
		`{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":"a__b","arguments":{},"_meta":{"progressToken":"p"}}}`,
		`{"jsonrpc":"2.0","id":9007199254740993,"method":"tools/call","params":{"name":"a__b"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a__b","arguments":{"n":1e999}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a__b","_meta":{"progressToken":1,"x":2}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a__b","task":{"ttl":1}}}`,
		`{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"a__b"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","result":{},"params":{"name":"a__b"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","method":"ping","params":{"name":"a__b"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a__b","name":"c__d","arguments":{"a":1,"a":2}}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a__b","arguments":"\ud800"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		c, ok := parseFastCall(line)
		if !ok {
			return
		}
		var base struct {
			JSONRPC string        `json:"jsonrpc"`
			Method  mcp.MCPMethod `json:"method"`
			ID      any           `json:"id,omitempty"`
			Result  any           `json:"result,omitempty"`
		}
		if err := json.Unmarshal(line, &base); err != nil {
			t.Fatalf("accepted %q, which mcp-go cannot parse: %v", line, err)
		}
		if base.JSONRPC != "2.0" || base.Method != mcp.MethodToolsCall || base.ID == nil || base.Result != nil {
			t.Fatalf("accepted %q, which mcp-go does not serve as a tools/call: %+v", line, base)
		}
		var req mcp.CallToolRequest
		if err := json.Unmarshal(line, &req); err != nil {
			t.Fatalf("accepted %q, which mcp-go refuses: %v", line, err)
		}
		if req.Params.Task != nil || len(req.Params.InputResponses) > 0 || req.Params.RequestState != "" {
			t.Fatalf("accepted %q, a task or a multi-round-trip retry", line)
		}
		if req.Params.Name != c.req.Params.Name || !bytes.Equal(req.Params.RawArguments, c.req.Params.RawArguments) ||
			!reflect.DeepEqual(req.Params.Arguments, c.req.Params.Arguments) || !reflect.DeepEqual(req.Params.Meta, c.req.Params.Meta) {
			t.Fatalf("read %q as\n%+v\nmcp-go reads\n%+v", line, c.req.Params, req.Params)
		}
		var id any
		if err := json.Unmarshal(c.id, &id); err != nil || !reflect.DeepEqual(id, base.ID) {
			t.Fatalf("id %s, mcp-go's %v", c.id, base.ID)
		}
	})
}

// The ordinary calls are served here; the rest are left to mcp-go.
func TestParseFastCall(t *testing.T) {
	for line, want := range map[string]bool{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a__b","arguments":{"x":1}}}`:                                   true,
		`{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":"a__b","_meta":{"progressToken":"p"}}}`:                       true,
		`{"jsonrpc":"2.0","id":9007199254740993,"method":"tools/call","params":{"name":"a__b","arguments":{"n":12345678901234567890}}}`: true,
		`{"jsonrpc":"2.0","id":9007199254740993,"method":"tools/call","params":{"name":"a__b","arguments":{"n":1e400}}}`:                false,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a__b","arguments":{"n":1e999}}}`:                               false,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a__b","_meta":{"progressToken":"p","vendor/x":1}}}`:            false,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a__b","task":{}}}`:                                             false,
		`{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"a__b"}}`:                                                    false,
		`{"jsonrpc":"2.0","id":{},"method":"tools/call","params":{"name":"a__b"}}`:                                                      false,
		`{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"a__b"}}`:                                                       false,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"cursor":"tools/call"}}`:                                               false,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a__b","requestState":"s"}}`:                                    false,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a__b"},"error":{"code":1,"message":"m"}}`:                      false,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a__b","arguments":{}}`:                                         false,
		// Names encoding/json would fold or merge: mcp-go's to read.
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{"x":1}},"pArAms":{"name":"a__b"}}`: false,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a__b"},"params":{"name":"c__d"}}`:       false,
		`{"jsonrpc":"2.0","id":1,"ID":2,"method":"tools/call","params":{"name":"a__b"}}`:                         false,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a__b","Arguments":{"x":1}}}`:            false,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a__b","tas\u212a":{}}}`:                 false,
	} {
		if _, got := parseFastCall([]byte(line)); got != want {
			t.Errorf("parseFastCall(%s) = %v, want %v", line, got, want)
		}
	}
}
