package main

import (
	"context"
	"strings"
	"testing"

	"github.com/mcp-guard/mcp-guard/ledger"
)

// The same call with the same arguments, in a row, is denied past the limit
// with the limit's name; the upstream saw only the calls within it.
func TestLimits_IdenticalRepeatsDeniedAndNamed(t *testing.T) {
	e := newEnv(t)
	cfg := e.config("[limits]\nidentical_call_repeats = 2\n", e.fake("db", ledgerTools), ledgerRules)
	h := e.connect(cfg, "")
	for i := range 2 {
		if res, err := h.call(t, "db__echo", map[string]any{"q": 1}); err != nil || res.IsError {
			t.Fatalf("call %d: %v %v", i, err, res)
		}
	}
	res, err := h.call(t, "db__echo", map[string]any{"q": 1})
	if err != nil || !res.IsError || !strings.Contains(resultText(res), "limits.identical_call_repeats") {
		t.Fatalf("3rd identical call: %v %q", err, resultText(res))
	}
	if n := len(e.calls("db")); n != 2 {
		t.Fatalf("upstream got %d calls, want 2", n)
	}
	rows, _ := e.openLedger().Calls(context.Background(), ledger.CallFilter{Limit: 1})
	if len(rows) != 1 || rows[0].Decision != "deny" || rows[0].Reason != "limit: identical_call_repeats" {
		t.Fatalf("ledger row %+v", rows)
	}
}

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

// A result over limits.result_bytes is replaced by an error result; the
// ledger keeps the digest and size of what the upstream sent.
func TestLimits_OversizedResultReplaced(t *testing.T) {
	e := newEnv(t)
	big := `{"content":[{"type":"text","text":"` + strings.Repeat("x", 5000) + `"}]}`
	srv := e.fake("db", `{"tools":[{"name":"dump","inputSchema":{"type":"object"}},{"name":"small","inputSchema":{"type":"object"}}],"calls":{"dump":{"do":"result","result":`+big+`}}}`)
	h := e.connect(e.config("[limits]\nresult_bytes = 4096\n", srv, ledgerRules), "")
	res, err := h.call(t, "db__dump", map[string]any{})
	if err != nil || !res.IsError || !strings.Contains(resultText(res), "over limits.result_bytes (4096)") || strings.Contains(resultText(res), "xxxx") {
		t.Fatalf("oversized result: %v %q", err, resultText(res))
	}
	if res, err := h.call(t, "db__small", map[string]any{}); err != nil || res.IsError {
		t.Fatalf("small result: %v", err)
	}
	led := e.openLedger()
	eventually(t, "the outcome", func() bool { return e.callsByTool(led)["db__dump"].State == "done" })
	r := e.callsByTool(led)["db__dump"]
	if r.ResultBytes != int64(len(big)) || len(r.ResultDigest) != 64 || !r.IsError || !strings.Contains(r.Err, "limit: result_bytes") {
		t.Fatalf("ledger row %+v", r)
	}
}

// A call over limits.call_timeout is cancelled upstream and recorded as
// failed with the limit named.
func TestLimits_CallTimeoutCancelsUpstreamAndRecords(t *testing.T) {
	e := newEnv(t)
	h := e.connect(e.config("[limits]\ncall_timeout = \"1s\"\n", e.fake("db", ledgerTools), ledgerRules), "")
	_, err := h.call(t, "db__slow", map[string]any{})
	if err == nil || !strings.Contains(err.Error(), "did not answer within 1s") {
		t.Fatalf("slow call: %v", err)
	}
	id := string(e.calls("db")[0].ID)
	eventually(t, "notifications/cancelled upstream", func() bool {
		for _, l := range e.record("db") {
			if strings.Contains(l, `"notifications/cancelled"`) && strings.Contains(l, `"requestId":`+id) {
				return true
			}
		}
		return false
	})
	led := e.openLedger()
	eventually(t, "the failure recorded", func() bool { return e.callsByTool(led)["db__slow"].State == "failed" })
	if r := e.callsByTool(led)["db__slow"]; !strings.Contains(r.Err, "did not answer within 1s") {
		t.Fatalf("ledger row %+v", r)
	}
}
