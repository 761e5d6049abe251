package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// startupConfig writes config.toml with a top-level startup_wait (which
// must come before any table), a ledger under state, and blocks.
func (e *env) startupConfig(wait string, blocks ...string) string {
	e.t.Helper()
	p := filepath.Join(e.dir, "config.toml")
	src := fmt.Sprintf("startup_wait = %q\n\n[ledger]\npath = %q\n\n%s", wait, filepath.Join(e.state, "ledger.db"), strings.Join(blocks, "\n"))
	if err := os.WriteFile(p, []byte(src), 0o600); err != nil {
		e.t.Fatal(err)
	}
	return p
}

const startupRules = `
[limits]
start_timeout = "4s"

[[rule]]
server = "*"
tool = "*"
class = "read"
action = "allow"
`

// mcp-guard tools is a one-shot listing: it waits for every server, each up
// to limits.start_timeout, lists the ready ones and reports the one that
// did not answer.
func TestTools_ReportsAServerThatDidNotAnswer(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	good := e.fake("good", `{"tools":[{"name":"ping_me","inputSchema":{"type":"object"}}]}`)
	slow := e.fake("slow", `{"stall":{"tools/list":1500},"tools":[{"name":"late_tool","inputSchema":{"type":"object"}}]}`)
	dead := e.fake("dead", `{"stall":{"tools/list":-1},"tools":[{"name":"never","inputSchema":{"type":"object"}}]}`)
	cfg := e.startupConfig("200ms", good, slow, dead, strings.Replace(startupRules, `"4s"`, `"3s"`, 1))
	out, code := e.mcpGuard("tools", "--config", cfg)
	if code != 1 {
		t.Fatalf("tools exit %d, want 1:\n%s", code, out)
	}
	for _, want := range []string{"good__ping_me", "slow__late_tool", `server dead: not listed: server "dead" did not list its tools within 3s (limits.start_timeout)`} {
		if !strings.Contains(out, want) {
			t.Fatalf("tools output lacks %q:\n%s", want, out)
		}
	}
}
