package main

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// serve --server NAME, as `mcp-guard wrap --per-server` has the host start
// it, runs that server alone: the host sees only its tools, the other
// servers are never started, and calls still go through the rules.
func TestServe_ServerFlagRunsOnlyThatServer(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := e.config(e.fake("notes", threeTools), e.fake("other", threeTools), threeRules, `
[[rule]]
server = "other"
tool = "*"
class = "read"
action = "allow"
`)
	stderr := &lockedBuffer{}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-host", Version: "1"}, nil)
	s, err := client.Connect(ctx, e.serveTransport(stderr, "serve", "--config", cfg, "--server", "notes"), nil)
	if err != nil {
		t.Fatalf("connect to mcp-guard serve --server notes: %v\nstderr:\n%s", err, stderr)
	}
	h := &host{ClientSession: s, stderr: stderr}
	t.Cleanup(func() {
		h.Close()
		if t.Failed() {
			t.Logf("mcp-guard stderr:\n%s", stderr)
		}
	})

	got := h.toolNames(t)
	slices.Sort(got)
	if want := []string{"notes__drop_table", "notes__read_note"}; !slices.Equal(got, want) {
		t.Fatalf("host sees %v, want %v (notes only)", got, want)
	}
	res, err := h.call(t, "notes__drop_table", map[string]any{})
	if err != nil || !res.IsError || len(e.calls("notes")) != 0 {
		t.Fatalf("a denied call: %v %+v, upstream got %d calls", err, res, len(e.calls("notes")))
	}
	if _, err := os.Stat(e.recordPath("other")); !os.IsNotExist(err) {
		t.Fatalf("the other server was started (its record exists: %v)", err)
	}
}
