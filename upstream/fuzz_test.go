package upstream

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/mcp-guard/mcp-guard/config"
)

// FuzzUpstreamMessages feeds arbitrary lines from an "upstream" to the real
// message path: the conn's dispatch and the upstream's notification and
// request handlers. Whatever arrives, nothing panics or blocks, a pending
// request gets at most one answer, and every reply mcp-guard sends back is
// one line of valid JSON.
func FuzzUpstreamMessages(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":"g-1","result":{"tools":[]}}`,
		`{"jsonrpc":"2.0","id":"g-1","error":{"code":-32601,"message":"no"}}`,
		`{"jsonrpc":"2.0","id":7,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":8,"method":"sampling/createMessage","params":{"messages":[]}}`,
		`{"jsonrpc":"2.0","id":9,"method":"roots/list"}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p-1","progress":1}}`,
		`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`,
		`{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"file:///x"}}`,
		`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"\u001b[2J"}}`,
		"{\"jsonrpc\":\"2.0\",\"id\":\"g-1\",\"result\":{}}\n{\"jsonrpc\":\"2.0\",\"id\":\"g-1\",\"result\":{}}",
		`{"id":{"a":1},"method":""}`,
		`[1,2,3]`,
		"\xff\xfe",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var mu sync.Mutex
		var sent [][]byte
		u := newClient(Spec{Name: "fuzz"}, Options{Limits: config.DefaultLimits(), Version: "test", Log: slog.New(slog.DiscardHandler)})
		u.conn = newConn("fuzz", func(b []byte, _ string) error {
			mu.Lock()
			sent = append(sent, append([]byte(nil), b...))
			mu.Unlock()
			return nil
		}, u.log)
		u.conn.onNotify = u.onNotify
		u.conn.onRequest = u.onRequest
		u.progress["p-1"] = func(json.RawMessage) {}
		answers := make(chan *message, 1)
		u.conn.pending["g-1"] = answers
		for _, line := range bytes.Split(in, []byte("\n")) {
			u.conn.handle(line)
		}
		mu.Lock()
		defer mu.Unlock()
		for _, b := range sent {
			if !json.Valid(b) || strings.Count(strings.TrimSuffix(string(b), "\n"), "\n") != 0 {
				t.Fatalf("mcp-guard sent %q: not one line of JSON", b)
			}
		}
	})
}

// FuzzReadEvents: the SSE reader never panics, never delivers more than its
// cap, and stops when told to.
func FuzzReadEvents(f *testing.F) {
	for _, s := range []string{
		"event: endpoint\ndata: /m\n\n",
		"data: {\"a\":1}\r\n\r\n: keep-alive\n\ndata: x\ndata: y\n\n",
		"data:" + strings.Repeat("z", 300) + "\n\n",
		"event: message\nid: 3\nretry: 10\ndata\n\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		n := 0
		readEvents(bytes.NewReader(in), 256, nil, func(typ string, data []byte) bool {
			if len(data) > 256 {
				t.Fatalf("an event of %d bytes passed a 256-byte cap", len(data))
			}
			n++
			return n < 5
		})
		if n > 5 {
			t.Fatalf("%d events delivered after the reader was told to stop", n)
		}
	})
}
