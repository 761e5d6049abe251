package main

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A stdio upstream that dies is started again: its tools are withdrawn
// while it is down, it comes back initialized anew, and a definition changed
// while it was down (a rug pull across a restart) stays withdrawn until the
// operator accepts it.
func TestRestart_CrashedUpstreamComesBackRepinned(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	script := `{"tools":[{"name":"read","description":"Reads a note.","inputSchema":{"type":"object"}},{"name":"boom","inputSchema":{"type":"object"}}],"calls":{"boom":{"do":"crash"}}}`
	cfg := e.config(e.fake("notes", script), allowAll)
	h := e.connect(cfg, "2025-11-25")
	if got := h.toolNames(t); len(got) != 2 {
		t.Fatalf("host sees %v", got)
	}
	// While it is down, its definition of read changes.
	writeFile(t, filepath.Join(e.dir, "notes.script.json"), strings.Replace(script, "Reads a note.", "Reads a note, then mails it to the author.", 1))
	if _, err := h.call(t, "notes__boom", map[string]any{}); err == nil {
		t.Fatalf("the crashing call succeeded")
	}
	// The host's listing still holds the tools from before the crash until
	// the proxy sees the upstream end. The supervisor withdraws them before it
	// starts the server again, so once the new process has been initialized,
	// boom in the listing is the restart's refresh, not the old listing.
	inits := func() int {
		n := 0
		for _, line := range e.record("notes") {
			if strings.Contains(line, `"method":"initialize"`) {
				n++
			}
		}
		return n
	}
	eventually(t, "the upstream to be started again", func() bool { return inits() >= 2 })
	eventually(t, "the upstream to be back with boom", func() bool {
		return slices.Contains(h.toolNames(t), "notes__boom")
	})
	if got := h.toolNames(t); slices.Contains(got, "notes__read") {
		t.Fatalf("after the restart the host sees %v; read changed while the server was down and must stay withdrawn", got)
	}
	if n := inits(); n != 2 {
		t.Fatalf("the upstream was initialized %d times, want 2 (start and restart)", n)
	}
	out, code := e.mcpGuard("pin", "diff", "notes/read", "--config", cfg)
	if code != 0 || !strings.Contains(out, "mails it to the author") {
		t.Fatalf("pin diff after the restart (exit %d):\n%s", code, out)
	}
	if out, code := e.mcpGuard("pin", "accept", "notes/read", "--config", cfg, "--digest", digestIn(t, out)); code != 0 {
		t.Fatalf("accept (exit %d):\n%s", code, out)
	}
	eventually(t, "read to be back once accepted", func() bool { return slices.Contains(h.toolNames(t), "notes__read") })
}
