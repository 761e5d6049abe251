//lint:file-ignore SA1019 these tests are about MCP logging, which mcp-guard relays while SEP-2577's deprecation window keeps it in the protocol

package main

import (
	"context"
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
	stderr := &lockedBuffer{}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := client.Connect(ctx, e.serveTransport(stderr, "serve", "--config", cfg), &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
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

// server-everything's simulated logging reaches the host through mcp-guard,
// and the host's logging/setLevel is passed on.
func TestLogging_ServerEverything(t *testing.T) {
	t.Parallel()
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
