package proxy

import (
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mcp-guard/mcp-guard/testdata/fakeupstream"
	up "github.com/mcp-guard/mcp-guard/upstream"
)

// serveFakeHTTP serves the fake upstream's streamable HTTP mode with
// script on addr in this process; stop ends it.
func serveFakeHTTP(t *testing.T, addr, script string) (url string, stop func()) {
	t.Helper()
	sp := filepath.Join(t.TempDir(), "script.json")
	if err := os.WriteFile(sp, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan int, 1)
	go func() { served <- fakeupstream.ServeHTTP(ctx, []string{"--script", sp}, ln, io.Discard) }()
	var once bool
	stop = func() {
		if !once {
			once = true
			cancel()
			<-served
		}
	}
	t.Cleanup(stop)
	return "http://" + ln.Addr().String() + "/mcp", stop
}

// Failures of a url server fail the affected calls with the reason and
// nothing hangs: a 500, then, right after, the backoff named; when the
// server goes, its tools are withdrawn; back on the same address it is
// connected again, its tools checked against their pins: one whose
// description changed while it was away stays withdrawn.
func TestHTTPUpstreamFailsWithdrawsAndReconnects(t *testing.T) {
	url, stop := serveFakeHTTP(t, "127.0.0.1:0", `{"tools":[{"name":"read","inputSchema":{"type":"object"}},{"name":"boom","inputSchema":{"type":"object"}}],"http":{"statusFor":{"tools/call":500}}}`)
	addr := strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/mcp")
	p := newMemProxyWith(t, mustRules(t, allowAll), func(o *Options) {
		o.Upstreams = []up.Spec{{Name: "notes", URL: url}}
	})
	h := startMemHost(t, p.Proxy)
	r := h.request("1", "tools/call", `{"name":"notes__read","arguments":{}}`)
	if r.Error == nil || !strings.Contains(r.Error.Message, `upstream "notes" answered HTTP 500`) {
		t.Fatalf("a call the server answers 500: %+v %s", r.Error, r.Result)
	}
	r = h.request("2", "tools/call", `{"name":"notes__read","arguments":{}}`)
	if r.Error == nil || !strings.Contains(r.Error.Message, "tries again in") {
		t.Fatalf("a call right after the failure: %+v %s; want the backoff named", r.Error, r.Result)
	}

	stop()
	n := 0
	next := func() string { n++; return strconv.Itoa(n) } // each tools/list its own id
	eventually(t, "the gone server's tools withdrawn", func() bool { return len(h.toolNames("l"+next())) == 0 })
	serveFakeHTTP(t, addr, `{"tools":[{"name":"read","description":"now different","inputSchema":{"type":"object"}},{"name":"boom","inputSchema":{"type":"object"}}]}`)
	eventually(t, "the server connected again", func() bool { return slices.Contains(h.toolNames("l"+next()), "notes__boom") })
	if got := h.toolNames("l" + next()); !slices.Equal(got, []string{"notes__boom"}) {
		t.Fatalf("after reconnecting the host sees %v; want read withdrawn (its pin changed)", got)
	}
	if r := h.request("3", "tools/call", `{"name":"notes__boom","arguments":{}}`); r.Error != nil || strings.Contains(string(r.Result), `"isError":true`) {
		t.Fatalf("a call after reconnecting: %+v %s", r.Error, r.Result)
	}
}
