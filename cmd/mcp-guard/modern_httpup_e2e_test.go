package main

import (
	"fmt"
	"strings"
	"testing"
)

// Protocol 2026-07-28 to url servers (PF7): a legacy url server found by
// protocol = "auto". (The go-sdk 2026-07-28 server over HTTP is walked in
// the proxy package: modernup_walk_test.go.)

// protocol = "auto" to a legacy streamable HTTP server (npm
// server-everything): server/discover is refused, initialize follows
// (with its session), and calls work.
func TestModernHTTPUp_AutoFallsBackToLegacy(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	port := npmHTTPServer(t, "streamableHttp")
	cfg := e.config(fmt.Sprintf("[[server]]\nname = \"every\"\nurl = \"http://127.0.0.1:%d/mcp\"\nprotocol = \"auto\"\n", port), everythingHTTPRules)
	h := e.connect(cfg, "2025-11-25")
	res, err := h.call(t, "every__echo", map[string]any{"message": "after auto"})
	if err != nil || res.IsError || resultText(res) != "Echo: after auto" {
		t.Fatalf("echo: %v %q", err, resultText(res))
	}
	if res, err := h.call(t, "every__get-env", map[string]any{}); err != nil || !res.IsError || !strings.Contains(resultText(res), "the environment is not for the model") {
		t.Fatalf("get-env: want the rule's denial, got %v %q", err, resultText(res))
	}
	if !strings.Contains(h.stderr.String(), "server/discover failed; speaking 2025-11-25") {
		t.Fatalf("mcp-guard did not say it fell back:\n%s", h.stderr)
	}
}
