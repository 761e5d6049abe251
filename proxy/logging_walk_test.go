//lint:file-ignore SA1019 these walks are about MCP logging, which mcp-guard relays while SEP-2577's deprecation window keeps it in the protocol

package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// An upstream's log messages reach the host escaped, under the server's
// name, and rate-limited: a flood of 200 arrives as at most a burst.
func TestWalk_LoggingRelayedEscapedAndRateLimited(t *testing.T) {
	walk(t, func(t *testing.T) {
		lines := []string{`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"warning","logger":"db","data":{"msg":"\u001b[2Jcleared \u202eevil"}}}`}
		for i := range 200 {
			lines = append(lines, fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"flood %d"}}`, i))
		}
		// mark sends one message once the bucket has refilled: the host
		// handles notifications in order, so once it has the marker it has
		// every flood message mcp-guard relayed.
		marker := `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"marker"}}`
		b, _ := json.Marshal(map[string]any{
			"tools": []any{map[string]any{"name": "noisy", "inputSchema": map[string]any{"type": "object"}}, map[string]any{"name": "mark", "inputSchema": map[string]any{"type": "object"}}},
			"calls": map[string]any{
				"noisy": map[string]any{"do": "notify", "lines": lines},
				"mark":  map[string]any{"do": "notify", "lines": []string{marker}, "delayMs": 500},
			},
		})
		p := newMemProxy(t, allRules, [2]string{"notes", string(b)})
		var mu sync.Mutex
		var msgs []*sdk.LoggingMessageParams
		s := startSDKHost(t, p.Proxy, &sdk.ClientOptions{LoggingMessageHandler: func(_ context.Context, r *sdk.LoggingMessageRequest) {
			mu.Lock()
			msgs = append(msgs, r.Params)
			mu.Unlock()
		}})
		got := func() []*sdk.LoggingMessageParams { mu.Lock(); defer mu.Unlock(); return slices.Clone(msgs) }
		sdkCall(t, s, "notes__noisy", map[string]any{})
		sdkCall(t, s, "notes__mark", map[string]any{})
		eventually(t, "the marker message", func() bool {
			m := got()
			return len(m) > 0 && m[len(m)-1].Data == "marker"
		})
		flood := got()
		flood = flood[:len(flood)-1]
		first, _ := json.Marshal(flood[0].Data)
		if flood[0].Logger != "notes/db" || flood[0].Level != "warning" || !strings.Contains(string(first), `\\u{001B}[2Jcleared \\u{202E}evil`) {
			t.Fatalf("first message: logger %q level %q data %s; want it escaped under notes/db", flood[0].Logger, flood[0].Level, first)
		}
		if len(flood) > 30 || len(flood) < 10 {
			t.Fatalf("the host got %d of 201 messages; want the burst (about 20) and no more", len(flood))
		}
	})
}
