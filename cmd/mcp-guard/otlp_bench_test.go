package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkCallExport is BenchmarkCall's allowed call through mcp-guard
// with [export] otlp off, to a live collector (the OpenTelemetry
// Collector's otlpreceiver, testdata/otelcol), and to a dead one (a port
// nothing listens on): scripts/bench prints the ratios to off. Export is
// off the call's path, so all three should match.
func BenchmarkCallExport(b *testing.B) {
	for _, how := range []string{"off", "live", "dead"} {
		b.Run(how, func(b *testing.B) {
			binaries(b)
			dir := b.TempDir()
			script := filepath.Join(dir, "s.json")
			os.WriteFile(script, []byte(`{"tools":[{"name":"echo","inputSchema":{"type":"object","properties":{"message":{"type":"string"}}}}]}`), 0o600)
			export := ""
			switch how {
			case "live":
				export = fmt.Sprintf("[export]\notlp = %q\n", startCollector(b, 0).url())
			case "dead":
				export = fmt.Sprintf("[export]\notlp = \"http://127.0.0.1:%d\"\n", anyPort(b))
			}
			cfg := filepath.Join(dir, "config.toml")
			os.WriteFile(cfg, []byte(fmt.Sprintf("[ledger]\npath = %q\nwitness = []\n"+benchLimits+export+"[[server]]\nname = \"b\"\ncommand = [%q, \"--script\", %q]\n%s",
				filepath.Join(dir, "state", "ledger.db"), bins.fakeup, script, allowAll)), 0o600)
			cmd := exec.Command(bins.guard, "serve", "--config", cfg)
			cmd.Env = append([]string{"HOME=" + dir}, coverEnv()...)
			client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
			s, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close() })
			params := &mcp.CallToolParams{Name: "b__echo", Arguments: map[string]any{"message": "hello"}}
			timeCalls(b, s, cmd.Process.Pid, params, 20, func(*mcp.CallToolResult) bool { return true })
		})
	}
}
