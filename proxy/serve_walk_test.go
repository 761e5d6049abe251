package proxy

import (
	"context"
	"io"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// toolNamesOf is what s lists, sorted.
func toolNamesOf(t *testing.T, s *sdk.ClientSession) []string {
	t.Helper()
	lt, err := s.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tl := range lt.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	return names
}

// The host sees only tools a rule classifies, each under <server>__<tool>,
// whichever protocol version it speaks.
func TestWalk_ExposesOnlyClassifiedToolsNamespaced(t *testing.T) {
	for _, version := range []string{"2025-06-18", "2025-11-25", modernVersion} {
		t.Run("version="+version, func(t *testing.T) {
			walk(t, func(t *testing.T) {
				p := newMemProxy(t, threeRules, [2]string{"notes", threeTools})
				s := startSDKHostAt(t, p.Proxy, version, nil)
				if got, want := toolNamesOf(t, s), []string{"notes__drop_table", "notes__read_note"}; !slices.Equal(got, want) {
					t.Fatalf("host sees %v, want %v", got, want)
				}
			})
		})
	}
}

// An upstream that crashes mid-call fails that call at once with a clear
// error; the other upstream keeps serving. (The binary's tests follow a
// crashed child's last stderr into its log, and its restart.)
func TestWalk_CrashedUpstreamFailsItsCallsOthersKeepServing(t *testing.T) {
	walk(t, func(t *testing.T) {
		p := newMemProxy(t, allowAll,
			[2]string{"crashy", `{"tools":[{"name":"boom","inputSchema":{"type":"object"}}],"calls":{"boom":{"do":"crash","stderr":"goodbye"}}}`},
			[2]string{"steady", `{"tools":[{"name":"echo","inputSchema":{"type":"object"}}]}`})
		s := startSDKHost(t, p.Proxy, nil)
		// At once, not at a deadline: the error says the upstream went.
		// A call left waiting on the dead upstream would end only at
		// callBounded's minute, with another error.
		_, err := callTool(s, "crashy__boom", map[string]any{})
		if err == nil || !strings.Contains(err.Error(), `upstream "crashy" closed its connection before it answered`) {
			t.Fatalf("call to crashing upstream: err=%v; want it to say the upstream went", err)
		}
		// Its tools are withdrawn while it is down: the call is refused as
		// a name not shown (-32602) or, when the host's request raced the
		// withdrawal, by the handler's withdrawn check (an isError result).
		if res, err := callTool(s, "crashy__boom", map[string]any{}); err == nil && (!res.IsError || !strings.Contains(textOf(res), "withdrawn")) {
			t.Fatalf("second call to the crashed upstream succeeded: %v", textOf(res))
		}
		if res, err := callTool(s, "steady__echo", map[string]any{"still": "here"}); err != nil || res.IsError {
			t.Fatalf("the other upstream stopped serving: %v %+v", err, res)
		}
	})
}

// A host's cancel becomes notifications/cancelled upstream, for the request
// id mcp-guard used, and the session goes on.
func TestWalk_HostCancelReachesTheUpstream(t *testing.T) {
	walk(t, func(t *testing.T) {
		p := newMemProxy(t, allowAll, [2]string{"slow", `{"tools":[{"name":"wait","inputSchema":{"type":"object"}}],"calls":{"wait":{"do":"sleep","ms":30000}}}`})
		s := startSDKHost(t, p.Proxy, nil)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := s.CallTool(ctx, &sdk.CallToolParams{Name: "slow__wait", Arguments: map[string]any{}})
			done <- err
		}()
		eventually(t, "the call to reach the upstream", func() bool { return len(p.received(t, "slow", "tools/call")) == 1 })
		cancel()
		<-done
		id := idOf(t, p.received(t, "slow", "tools/call")[0])
		eventually(t, "notifications/cancelled upstream", func() bool {
			for _, l := range p.received(t, "slow", "notifications/cancelled") {
				if strings.Contains(l, `"requestId":`+id) {
					return true
				}
			}
			return false
		})
		if err := s.Ping(context.Background(), nil); err != nil {
			t.Fatalf("ping after cancel: %v", err)
		}
	})
}

// Every tools/list page is walked; a cursor loop is refused and only that
// upstream's tools are withheld.
func TestWalk_EveryToolsListPageIsRead(t *testing.T) {
	walk(t, func(t *testing.T) {
		var tools []string
		for i := range 7 {
			tools = append(tools, `{"name":"t`+strconv.Itoa(i)+`","inputSchema":{"type":"object"}}`)
		}
		p := newMemProxy(t, allowAll,
			[2]string{"paged", `{"pageSize":2,"tools":[` + strings.Join(tools, ",") + `]}`},
			[2]string{"loopy", `{"cursorLoop":true,"tools":[{"name":"x","inputSchema":{"type":"object"}}]}`})
		s := startSDKHost(t, p.Proxy, nil)
		want := []string{"paged__t0", "paged__t1", "paged__t2", "paged__t3", "paged__t4", "paged__t5", "paged__t6"}
		if got := toolNamesOf(t, s); !slices.Equal(got, want) {
			t.Fatalf("host sees %v, want %v", got, want)
		}
		if !strings.Contains(p.log.String(), "repeated") {
			t.Fatalf("cursor loop not reported:\n%s", p.log)
		}
	})
}

// mcp-guard writes its own initialize: it offers 2025-11-25, sends no
// server/discover probe, and accepts an older valid version; a server
// answering with a version it does not know is not served, and the log
// says which version.
func TestWalk_InitializeOffers20251125WithoutDiscover(t *testing.T) {
	walk(t, func(t *testing.T) {
		p := newMemProxy(t, allowAll,
			[2]string{"old", `{"protocolVersion":"2025-03-26","tools":[{"name":"t","inputSchema":{"type":"object"}}]}`},
			[2]string{"future", `{"protocolVersion":"2099-01-01","tools":[{"name":"t","inputSchema":{"type":"object"}}]}`})
		s := startSDKHost(t, p.Proxy, nil)
		if got := toolNamesOf(t, s); !slices.Equal(got, []string{"old__t"}) {
			t.Fatalf("host sees %v; want only the upstream with a known version", got)
		}
		if sent := p.methodsSent(t, "old"); len(sent) == 0 || sent[0] != "initialize" || slices.Contains(sent, "server/discover") {
			t.Fatalf("methods sent upstream: %v", sent)
		}
		if init := p.received(t, "old", "initialize"); len(init) != 1 || !strings.Contains(init[0], `"protocolVersion":"2025-11-25"`) {
			t.Fatalf("initialize upstream: %v", init)
		}
		if !strings.Contains(p.log.String(), "2099-01-01") {
			t.Fatalf("unknown version not reported:\n%s", p.log)
		}
	})
}

// A host line over limits.message_bytes ends that host's session with an
// error saying so; nothing reaches the upstream.
func TestWalk_OversizedHostLineEndsTheSession(t *testing.T) {
	walk(t, func(t *testing.T) {
		p := newMemProxyWith(t, mustRules(t, threeRules), func(o *Options) { o.Limits.MessageBytes = 65536 }, [2]string{"notes", threeTools})
		h := startMemHost(t, p.Proxy)
		// The write blocks once serve stops reading; the pipe's close at the
		// test's end releases it.
		go io.WriteString(h.in, `{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{"name":"notes__read_note","arguments":{"id":"`+strings.Repeat("a", 70000)+`"}}}`+"\n")
		select {
		case <-h.served:
		case <-time.After(10 * time.Second):
			t.Fatal("mcp-guard kept the session after an oversized host line")
		}
		if h.serveErr == nil || !strings.Contains(h.serveErr.Error(), "exceeds the size limit") {
			t.Fatalf("the session ended with %v; want an error naming the size limit", h.serveErr)
		}
		if n := len(p.received(t, "notes", "tools/call")); n != 0 {
			t.Fatal("the oversized call reached the upstream")
		}
	})
}
