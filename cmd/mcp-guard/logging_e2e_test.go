//lint:file-ignore SA1019 these tests are about MCP logging, which mcp-guard relays while SEP-2577's deprecation window keeps it in the protocol

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// logHost is a go-sdk host that keeps the log messages it receives.
type logHost struct {
	*mcp.ClientSession
	mu   sync.Mutex
	msgs []*mcp.LoggingMessageParams
}

func (l *logHost) got() []*mcp.LoggingMessageParams {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]*mcp.LoggingMessageParams(nil), l.msgs...)
}

func (e *env) connectLogging(cfg string) *logHost {
	e.t.Helper()
	l := &logHost{}
	client := mcp.NewClient(&mcp.Implementation{Name: "log-host", Version: "1"}, &mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, r *mcp.LoggingMessageRequest) {
			l.mu.Lock()
			l.msgs = append(l.msgs, r.Params)
			l.mu.Unlock()
		},
	})
	cmd := e.serveCmd(cfg)
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 5 * time.Second}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		e.t.Fatalf("connect: %v\n%s", err, stderr)
	}
	l.ClientSession = s
	e.t.Cleanup(func() {
		s.Close()
		if e.t.Failed() {
			e.t.Logf("mcp-guard stderr:\n%s", stderr)
		}
	})
	return l
}

// An upstream's log messages reach the host escaped, under the server's
// name, and rate-limited: a flood of 200 arrives as at most a burst.
func TestLogging_RelayedEscapedAndRateLimited(t *testing.T) {
	e := newEnv(t)
	var lines []string
	lines = append(lines, `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"warning","logger":"db","data":{"msg":"\u001b[2Jcleared \u202eevil"}}}`)
	for i := 0; i < 200; i++ {
		lines = append(lines, fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"flood %d"}}`, i))
	}
	// mark sends one message once the bucket has refilled: the host handles
	// notifications in order, so once it has the marker it has every flood
	// message mcp-guard relayed.
	marker := `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"marker"}}`
	b, _ := json.Marshal(map[string]any{
		"tools": []any{map[string]any{"name": "noisy", "inputSchema": map[string]any{"type": "object"}}, map[string]any{"name": "mark", "inputSchema": map[string]any{"type": "object"}}},
		"calls": map[string]any{
			"noisy": map[string]any{"do": "notify", "lines": lines},
			"mark":  map[string]any{"do": "notify", "lines": []string{marker}, "delayMs": 500},
		},
	})
	l := e.connectLogging(e.config(e.fake("notes", string(b)), allowAll))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if _, err := l.CallTool(ctx, &mcp.CallToolParams{Name: "notes__noisy", Arguments: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.CallTool(ctx, &mcp.CallToolParams{Name: "notes__mark", Arguments: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the marker message", func() bool {
		msgs := l.got()
		return len(msgs) > 0 && msgs[len(msgs)-1].Data == "marker"
	})
	msgs := l.got()
	msgs = msgs[:len(msgs)-1] // the flood as relayed
	first, _ := json.Marshal(msgs[0].Data)
	if msgs[0].Logger != "notes/db" || msgs[0].Level != "warning" || !strings.Contains(string(first), `\\u{001B}[2Jcleared \\u{202E}evil`) {
		t.Fatalf("first message: logger %q level %q data %s; want it escaped under notes/db", msgs[0].Logger, msgs[0].Level, first)
	}
	if len(msgs) > 30 || len(msgs) < 10 {
		t.Fatalf("the host got %d of 201 messages; want the burst (about 20) and no more", len(msgs))
	}
}

// server-everything's simulated logging reaches the host through mcp-guard,
// and the host's logging/setLevel is passed on.
func TestLogging_ServerEverything(t *testing.T) {
	e := newEnv(t)
	l := e.connectLogging(e.config(npmServer(t, "every", everythingJS, "stdio"), `
[[rule]]
server = "every"
tool = "toggle-simulated-logging"
class = "read"
action = "allow"
`))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := l.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatalf("logging/setLevel through mcp-guard: %v", err)
	}
	if _, err := l.CallTool(ctx, &mcp.CallToolParams{Name: "every__toggle-simulated-logging", Arguments: map[string]any{}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a log message from server-everything", func() bool {
		for _, m := range l.got() {
			if strings.HasPrefix(m.Logger, "every") {
				return true
			}
		}
		return false
	})
}
