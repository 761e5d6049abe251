package main

import (
	"strings"
	"testing"
)

// After consecutive_denials refusals in a row, the session refuses every
// call, even an allowed one, until mcp-guard restarts.
func TestLimits_ConsecutiveDenialsStopTheSession(t *testing.T) {
	e := newEnv(t)
	cfg := e.config("[limits]\nconsecutive_denials = 3\n", e.fake("db", ledgerTools), ledgerRules)
	h := e.connect(cfg, "")
	for range 3 {
		h.call(t, "db__drop", map[string]any{})
	}
	res, err := h.call(t, "db__echo", map[string]any{})
	if err != nil || !res.IsError || !strings.Contains(resultText(res), "session was stopped after 3 refused calls") {
		t.Fatalf("allowed call after 3 denials: %v %q", err, resultText(res))
	}
	if n := len(e.calls("db")); n != 0 {
		t.Fatalf("upstream got %d calls", n)
	}
	if out, code := e.mcpGuard("reset", "--config", cfg, "--reason", "looked at it"); code != 0 {
		t.Fatalf("reset (exit %d): %s", code, out)
	}
	eventually(t, "the reset to reach serve", func() bool {
		res, err := h.call(t, "db__echo", map[string]any{"after": "reset"})
		return err == nil && !res.IsError
	})
	h.Close()
	h = e.connect(cfg, "")
	if res, err := h.call(t, "db__echo", map[string]any{}); err != nil || res.IsError {
		t.Fatalf("after a restart: %v %v", err, res)
	}
}
