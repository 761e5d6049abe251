package main

import (
	"strings"
	"testing"
)

// serve's log names refusals and asks; an allowed call is in the ledger and
// in the log only with MCP_GUARD_LOG=debug; another value is warned about.
func TestServeLog_RefusalsAlwaysAllowedCallsAtDebug(t *testing.T) {
	t.Parallel()
	script := `{"tools":[{"name":"echo","inputSchema":{"type":"object"}},{"name":"wipe","inputSchema":{"type":"object"}}]}`
	rules := "[[rule]]\nserver = \"s\"\ntool = \"echo\"\nclass = \"read\"\naction = \"allow\"\n\n" +
		"[[rule]]\nserver = \"s\"\ntool = \"wipe\"\nclass = \"destructive\"\naction = \"deny\"\n"
	for _, value := range []string{"", "debug", "loud"} {
		debug := value == "debug"
		e := newEnv(t)
		if value != "" {
			e.extra = append(e.extra, "MCP_GUARD_LOG="+value)
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
			t.Errorf("MCP_GUARD_LOG=%q: the allowed call in serve's log: %v\n%s", value, allowed, h.stderr)
		}
		// A value it does not know is named, not silently taken as info.
		if warned := strings.Contains(h.stderr.String(), "MCP_GUARD_LOG is not debug or info"); warned != (value == "loud") {
			t.Errorf("MCP_GUARD_LOG=%q: warned %v\n%s", value, warned, h.stderr)
		}
	}
}
