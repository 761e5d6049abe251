package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// benchText is about n bytes of ordinary text as a server returns it:
// words, numbers, line breaks, a URL with a query, JSON-looking fragments.
func benchText(n int) string {
	line := "The quick brown fox 12345 jumps over https://example.com/a?b=c%20d&e=f+g {\"k\": \"v\"} and the lazy dog.\n"
	return strings.Repeat(line, n/len(line)+1)[:n]
}

// benchSecretsSession is mcp-guard serve over the fake upstream whose tools
// "small" and "big" return ordinary text (about 100 bytes and 1 MiB), with
// five known secrets configured (secrets) or none (none).
func benchSecretsSession(b *testing.B, secrets bool) *mcp.ClientSession {
	b.Helper()
	binaries(b)
	dir := b.TempDir()
	small, _ := json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": benchText(100)}}})
	big, _ := json.Marshal(map[string]any{"content": []any{map[string]any{"type": "text", "text": benchText(1 << 20)}}})
	script := filepath.Join(dir, "s.json")
	os.WriteFile(script, []byte(`{"tools":[{"name":"small","inputSchema":{"type":"object"}},{"name":"big","inputSchema":{"type":"object"}}],
"calls":{"small":{"do":"result","result":`+string(small)+`},"big":{"do":"result","result":`+string(big)+`}}}`), 0o600)
	env := "env = { GIT_AUTHOR_NAME = \"Ann\" }\n"
	if secrets {
		env = "env = { API_TOKEN = \"tok-0123456789abcdef\", DB_PASSWORD = \"correct horse battery staple\", AWS_SECRET_ACCESS_KEY = \"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\", GH_TOKEN = \"ghp_012345678901234567890123456789abcdef\", SLACK_AUTH = \"xoxb-1234-5678-abcdefghijkl\" }\n"
	}
	cfg := filepath.Join(dir, "config.toml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("[ledger]\npath = %q\nwitness = []\n"+benchLimits+"result_bytes = 8388608\nmessage_bytes = 16777216\n[[server]]\nname = \"b\"\ncommand = [%q, \"--script\", %q]\n%s%s",
		filepath.Join(dir, "state", "ledger.db"), bins.fakeup, script, env, allowAll)), 0o600)
	cmd := exec.Command(bins.guard, "serve", "--config", cfg)
	cmd.Env = append([]string{"HOME=" + dir}, coverEnv()...)
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	s, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}

// BenchmarkSecrets is one allowed call through mcp-guard returning about
// 100 bytes (small) or 1 MiB (big) of ordinary text, with no secrets
// configured (none) and with five (secrets): what redaction at the host
// writer and the found-credential scan of the result cost. scripts/bench
// prints the ratios.
func BenchmarkSecrets(b *testing.B) {
	for _, size := range []string{"small", "big"} {
		for _, how := range []string{"none", "secrets"} {
			b.Run(size+"/"+how, func(b *testing.B) {
				s := benchSecretsSession(b, how == "secrets")
				params := &mcp.CallToolParams{Name: "b__" + size, Arguments: map[string]any{}}
				timeCalls(b, s, 0, params, 5, func(res *mcp.CallToolResult) bool { return !strings.Contains(resultText(res), "redacted") })
			})
		}
	}
}
