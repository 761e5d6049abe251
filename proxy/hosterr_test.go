package proxy

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	up "github.com/mcp-guard/mcp-guard/upstream"
)

// A host is told what happened and the ledger call; the local detail an
// internal error carries (paths, URLs, ledger errors) never reaches it.
func TestHostFailure_NamesTheCallNotLocalDetail(t *testing.T) {
	const local = "/home/op/.local/state/mcp-guard/logs/fs.stderr.log"
	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"ledger", fmt.Errorf("ledger: record: unable to open %s", local), "the request to its server failed; the operator's log says why (ledger call 7)"},
		{"ended", &up.EndedError{Err: errors.New("exited; its stderr is in " + local)}, "its server ended before it answered"},
		{"ended, host text", fmt.Errorf("wrapped: %w", &up.EndedError{Err: errors.New(local), Host: `upstream "fs" exited (exit status 1)`}), `upstream "fs" exited (exit status 1) (ledger call 7)`},
		{"closed", fmt.Errorf("upstream %q: %w", "fs", up.ErrClosed), "its server ended before it answered"},
		{"server's own error", fmt.Errorf("x: %w", &up.RPCError{Code: -32001, Message: "disk full"}), "its server answered with error -32001: disk full (ledger call 7)"},
		{"safe", fmt.Errorf("x %s: %w", local, hostSafef("upstream %q did not answer within 1s (limits.call_timeout)", "fs")), `did not answer within 1s (limits.call_timeout) (ledger call 7)`},
		{"http status", &up.StatusError{Code: 500, Msg: `upstream "fs" answered HTTP 500: oops`, Safe: true}, `answered HTTP 500: oops`},
		{"redirect", &up.StatusError{Code: 307, Msg: "a redirect to https://internal.example" + local, Safe: false}, "the operator's log says why"},
	} {
		got := hostFailureText("fs__read", 7, c.err)
		if !strings.Contains(got, c.want) || strings.Contains(got, local) || strings.Contains(got, "internal.example") || !strings.HasPrefix(got, "mcp-guard: fs__read: ") {
			t.Errorf("%s: %q; want it to hold %q and nothing local", c.name, got, c.want)
		}
	}
	if got := hostFailureText("fs__read", 0, errors.New(local)); strings.Contains(got, "ledger call") {
		t.Errorf("no call recorded: %q", got)
	}
}
