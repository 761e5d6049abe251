package proxy

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/mcp-guard/mcp-guard/classify"
	"github.com/mcp-guard/mcp-guard/config"
	"github.com/mcp-guard/mcp-guard/gate"
	"github.com/mcp-guard/mcp-guard/internal/canon"
	"github.com/mcp-guard/mcp-guard/ledger"
)

// FuzzHostMessages feeds arbitrary messages from a "host" to the real host
// path (Proxy.answer: mcp-guard's own methods, and what it answers of any
// other message), a real ledger file, no upstreams. Whatever arrives,
// nothing panics, every answer is JSON, and the ledger's chain still
// verifies.
func FuzzHostMessages(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"f","version":"1"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x__y","arguments":{"a":1,"a":2}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"prompts/get","params":{"name":"x__p","arguments":{"k":"v"}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"resources/read","params":{"uri":"mcp-guard://x/file:///etc/passwd"}}`,
		`{"jsonrpc":"2.0","id":6,"method":"resources/subscribe","params":{"uri":"mcp-guard://x/%2e%2e"}}`,
		`{"jsonrpc":"2.0","id":7,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"x__p"},"argument":{"name":"a","value":"b"}}}`,
		`{"jsonrpc":"2.0","id":8,"method":"logging/setLevel","params":{"level":"debug"}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}`,
		`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"x__y","arguments":"\ud800"}}`,
	} {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	ctx := context.Background()
	led, err := ledger.Open(ctx, filepath.Join(dir, "ledger.db"), ledger.Options{})
	if err != nil {
		f.Fatal(err)
	}
	defer led.Close()
	lease, err := led.StartSession(ctx, ledger.SessionInfo{Kind: "fuzz", Host: "fuzz"})
	if err != nil {
		f.Fatal(err)
	}
	rules, err := classify.Compile([]classify.Rule{{Server: "*", Tool: "*", Class: classify.Read, Action: classify.Allow}})
	if err != nil {
		f.Fatal(err)
	}
	p, err := New(ctx, Options{Gate: gate.New(rules), Ledger: led, Lease: lease, LogDir: dir, Limits: config.DefaultLimits()})
	if err != nil {
		f.Fatal(err)
	}
	defer p.Close()
	lastID := func(t *testing.T) int64 {
		rows, err := led.Calls(ctx, ledger.CallFilter{Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) == 0 {
			return 0
		}
		return rows[0].ID
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		before := lastID(t)
		if line, _, answered := p.answer(ctx, in); answered && line != nil && !json.Valid(line) {
			t.Fatalf("answer to %q is not JSON: %s", in, line)
		}
		// G2: a well-formed tools/call (nothing is exposed here) is refused
		// and recorded, whatever its arguments.
		if wellFormedCall(in) && lastID(t) == before {
			t.Fatalf("tools/call %q left no ledger row", in)
		}
	})
	if rep, err := led.Verify(ctx); err != nil || !rep.OK {
		f.Fatalf("the ledger does not verify after fuzzing: %+v %v", rep, err)
	}
}

// wellFormedCall reports whether in is a JSON-RPC tools/call request with an
// id, a non-empty string name (an empty one calls nothing) and arguments that are an object, as encoding/json reads
// it (as mcp-guard reads it).
func wellFormedCall(in []byte) bool {
	var m struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  string          `json:"method"`
		Params  *struct {
			Name      *string                    `json:"name"`
			Arguments map[string]json.RawMessage `json:"arguments"`
		} `json:"params"`
	}
	// With a repeated or case-folded member name, encoding/json's readers
	// disagree on what the call is (mcp-go's params decoder merges two
	// "params" objects differently from a plain struct): no oracle here.
	if !canon.Unique(in) || !exactNames(in, "jsonrpc", "id", "method", "params") {
		return false
	}
	if json.Unmarshal(in, &m) != nil || m.JSONRPC != "2.0" || m.Method != "tools/call" || m.Params == nil || m.Params.Name == nil || *m.Params.Name == "" {
		return false
	}
	if !exactNames(paramsOf(in), "name", "arguments") {
		return false
	}
	id := string(m.ID)
	return len(id) > 0 && id != "null" && (id[0] == '"' || id[0] == '-' || id[0] >= '0' && id[0] <= '9')
}

// paramsOf returns the raw "params" member of a JSON-RPC message.
func paramsOf(in []byte) []byte {
	var m struct {
		Params json.RawMessage `json:"params"`
	}
	_ = json.Unmarshal(in, &m)
	return m.Params
}
