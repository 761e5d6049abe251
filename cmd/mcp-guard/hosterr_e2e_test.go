package main

import (
	"strings"
	"testing"
)

// What the host is told of a failed call says what happened and names the
// ledger call, and nothing local: not mcp-guard's logs, config or ledger,
// nor the server's stderr. The operator's log (serve's stderr) and the
// ledger row have the detail. A server's own error answer reaches the host
// as the server wrote it (docs/fidelity.md, PF3), and the ledger row has it.
func TestServe_HostErrorsNameTheCallNotLocalPaths(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	script := `{"tools":[{"name":"boom","inputSchema":{"type":"object"}},{"name":"nope","inputSchema":{"type":"object"}},{"name":"ok","inputSchema":{"type":"object"}}],
"calls":{"boom":{"do":"crash","stderr":"panic: cannot open /srv/private/db.sqlite\n"},"nope":{"do":"error","code":-32001,"message":"disk full"}}}`
	cfg := e.config(e.fake("notes", script), allowAll)
	h := e.connect(cfg, "2025-11-25")
	leaks := []string{"/tmp", ".log", e.dir, e.state, cfg, "config.toml", "ledger.db", "/srv/private", "stderr"}
	clean := func(what, text string) {
		t.Helper()
		for _, l := range leaks {
			if strings.Contains(text, l) {
				t.Fatalf("%s tells the host %q:\n%s", what, l, text)
			}
		}
	}

	// Allow path: a server's own error answer reaches the host as it was.
	_, err := h.call(t, "notes__nope", map[string]any{})
	if err == nil || !strings.HasSuffix(err.Error(), ": disk full") || strings.Contains(err.Error(), "mcp-guard") {
		t.Fatalf("the server's error answer: %v; want its own message", err)
	}
	eventually(t, "the ledger row to hold the server's error", func() bool {
		return strings.Contains(e.callsByTool(e.openLedger())["notes__nope"].Err, "disk full")
	})
	clean("the server's error answer", err.Error())
	if res, err := h.call(t, "notes__ok", map[string]any{"n": 1}); err != nil || res.IsError {
		t.Fatalf("a call that works: %v %v", err, res)
	}

	// Deny path: the server crashes, writing to its stderr log.
	_, err = h.call(t, "notes__boom", map[string]any{"path": "/my/arg"})
	if err == nil {
		t.Fatal("the crashed call succeeded")
	}
	r := e.callsByTool(e.openLedger())["notes__boom"]
	msg := err.Error()
	if r.ID == 0 || !strings.Contains(msg, "(ledger call "+itoa(r.ID)+")") || !strings.Contains(msg, `upstream "notes" exited (exit status 3) before it answered`) {
		t.Fatalf("the host's error for a crashed server: %q; want what happened and ledger call %d", msg, r.ID)
	}
	clean("the crashed call's error", msg)
	// The operator has the detail: serve's log and the ledger row name the stderr log.
	eventually(t, "serve's log to name the stderr log", func() bool { return strings.Contains(h.stderr.String(), "notes.stderr.log") })
	eventually(t, "the ledger row to hold the detail", func() bool {
		r = e.callsByTool(e.openLedger())["notes__boom"]
		return strings.Contains(r.Err, "notes.stderr.log")
	})
	if len(e.calls("notes")) != 3 {
		t.Fatalf("the upstream received %d calls; want 3", len(e.calls("notes")))
	}
}
