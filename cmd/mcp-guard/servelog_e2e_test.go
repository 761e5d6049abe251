package main

import (
	"strings"
	"testing"
)

// serve's log names refusals and asks; an allowed call is in the ledger and
// in the log only with MCP_GUARD_LOG=debug.
func TestServeLog_RefusalsAlwaysAllowedCallsAtDebug(t *testing.T) {
	script := `{"tools":[{"name":"echo","inputSchema":{"type":"object"}},{"name":"wipe","inputSchema":{"type":"object"}}]}`
	rules := "[[rule]]\nserver = \"s\"\ntool = \"echo\"\nclass = \"read\"\naction = \"allow\"\n\n" +
		"[[rule]]\nserver = \"s\"\ntool = \"wipe\"\nclass = \"destructive\"\naction = \"deny\"\n"
	for _, debug := range []bool{false, true} {
		e := newEnv(t)
		if debug {
			e.extra = append(e.extra, "MCP_GUARD_LOG=debug")
		}
		h := e.connect(e.config(e.fake("s", script), rules), "")
		if res, err := h.call(t, "s__echo", map[string]any{"m": 1}); err != nil || res.IsError {
			t.Fatalf("echo: %v %v", err, res)
		}
		if res, err := h.call(t, "s__wipe", map[string]any{}); err == nil && !res.IsError {
			t.Fatalf("wipe was not refused: %v", resultText(res))
		}
		eventually(t, "the refusal in serve's log", func() bool {
			return strings.Contains(h.stderr.String(), "name=s__wipe decision=deny")
		})
		allowed := strings.Contains(h.stderr.String(), "name=s__echo decision=allow")
		if allowed != debug {
			t.Errorf("MCP_GUARD_LOG=debug %v: the allowed call in serve's log: %v\n%s", debug, allowed, h.stderr)
		}
	}
}
