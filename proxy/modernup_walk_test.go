package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-guard/mcp-guard/classify"
	"github.com/mcp-guard/mcp-guard/config"
	"github.com/mcp-guard/mcp-guard/gate"
	"github.com/mcp-guard/mcp-guard/ledger"
	"github.com/mcp-guard/mcp-guard/testdata/modernserver"
	up "github.com/mcp-guard/mcp-guard/upstream"
)

// The walks of a server mcp-guard speaks 2026-07-28 to: the official
// go-sdk's (testdata/modernserver), served in this process.

// depRules allow dep's prompts and tools but drop ("never").
var depRules = []classify.Rule{
	{Server: "dep", Prompt: "*", Action: classify.Allow},
	{Server: "dep", Tool: "drop", Class: classify.Destructive, Action: classify.Deny, Reason: "never"},
	{Server: "dep", Tool: "*", Class: classify.Read, Action: classify.Allow},
}

// modernProxy is a proxy over the go-sdk 2026-07-28 test server as "dep",
// spoken to at protocol, deciding by depRules; elicit lets dep ask the
// host for elicitation. What dep reads is recorded where p.received looks.
func modernProxy(t *testing.T, protocol string, elicit bool) *memProxy {
	t.Helper()
	return modernProxyMore(t, protocol, elicit, false)
}

// modernProxyMore is modernProxy, the server serving more (modernserver.New).
func modernProxyMore(t *testing.T, protocol string, elicit, more bool) *memProxy {
	t.Helper()
	access := gate.ClientAccess{}
	if elicit {
		access.Elicitation = config.AccessAllow
	}
	g := gate.New(mustRules(t, depRules), gate.WithClientAccess(map[string]gate.ClientAccess{"dep": access}))
	return newMemProxyGate(t, g, func(o *Options) {
		record := filepath.Join(filepath.Dir(o.LogDir), "dep.record")
		o.Upstreams = []up.Spec{{Name: "dep", Protocol: protocol, Capabilities: access.Capabilities(),
			Dial: func(ctx context.Context) (io.ReadWriteCloser, error) {
				f, err := os.OpenFile(record, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
				if err != nil {
					return nil, err
				}
				ours, theirs := net.Pipe()
				go func() {
					defer f.Close()
					_ = modernserver.New(more).Run(context.WithoutCancel(ctx), &sdk.IOTransport{Reader: modernserver.Recorded(theirs, f), Writer: theirs})
				}()
				return ours, nil
			}}}
	})
}

// listCallDeploy checks through s, a legacy host in front of the test
// server "dep": its four tools are listed, echo answers, the rules deny
// drop, and deploy's input_required reaches the host once, whose answer
// goes back with the server's requestState.
func listCallDeploy(t *testing.T, s *sdk.ClientSession, elicited *atomic.Int32) {
	t.Helper()
	if names := sdkToolNames(t, s); !slices.Equal(names, []string{"dep__deploy", "dep__drop", "dep__echo", "dep__pull"}) {
		t.Fatalf("tools: %v", names)
	}
	if _, text := sdkCall(t, s, "dep__echo", map[string]any{"q": "hi"}); text != `echo {"q":"hi"}` {
		t.Fatalf("echo: %q", text)
	}
	if res, text := sdkCall(t, s, "dep__drop", map[string]any{}); !res.IsError || !strings.Contains(text, "never") {
		t.Fatalf("drop: %q", text)
	}
	want := `deploy answered {"action":"accept","content":{"sure":true}} state deploy-state-1`
	if res, text := sdkCall(t, s, "dep__deploy", map[string]any{}); res.IsError || text != want || elicited.Load() != 1 {
		t.Fatalf("deploy: %q (host asked %d times)", text, elicited.Load())
	}
}

// A legacy host (2025-11-25) in front of a server mcp-guard speaks
// 2026-07-28 to: no initialize reaches it; tools are listed and called,
// rules deny; the server's input_required reaches the host as an
// elicitation/create, and its answer goes back in the retry with the
// server's requestState; one call in the ledger.
func TestWalk_UpstreamModernLegacyHost(t *testing.T) {
	walk(t, func(t *testing.T) {
		p := modernProxy(t, up.ProtocolModern, true)
		var elicited atomic.Int32
		s := startSDKHostAt(t, p.Proxy, "2025-11-25", modernOpts(&elicited, true))
		listCallDeploy(t, s, &elicited)
		sent := p.methodsSent(t, "dep")
		if slices.Contains(sent, "initialize") || !slices.Contains(sent, "server/discover") {
			t.Fatalf("methods sent to a 2026-07-28 server: %v", sent)
		}
		calls := p.received(t, "dep", "tools/call")
		if len(calls) != 3 || strings.Contains(calls[0], `"drop"`) || !strings.Contains(calls[2], `"requestState":"deploy-state-1"`) || !strings.Contains(calls[2], `"inputResponses":{"confirm":{"action":"accept"`) {
			t.Fatalf("tools/call the server got: %v", calls)
		}
		eventually(t, "one deploy call and one elicitation in the ledger", func() bool {
			d, el, dr := p.rowsOf(t, "deploy"), p.rowsOf(t, "elicitation/create"), p.rowsOf(t, "drop")
			return len(d) == 1 && d[0].State == "done" && len(el) == 1 && el[0].State == "done" && len(dr) == 1 && dr[0].Decision == "deny"
		})
	})
}

// A prompt's input_required from a 2026-07-28 server reaches a legacy host
// as an elicitation/create, and the host's answer goes back in the retry
// of the prompts/get with the server's requestState.
func TestWalk_UpstreamModernPromptInputRelayed(t *testing.T) {
	walk(t, func(t *testing.T) {
		p := modernProxy(t, up.ProtocolModern, true)
		var elicited atomic.Int32
		s := startSDKHostAt(t, p.Proxy, "2025-11-25", modernOpts(&elicited, true))
		res, err := s.GetPrompt(context.Background(), &sdk.GetPromptParams{Name: "dep__ask"})
		if err != nil {
			t.Fatal(err)
		}
		want := `ask answered {"action":"accept","content":{"sure":true}} state prompt-state-1`
		if promptText(res) != want || elicited.Load() != 1 {
			t.Fatalf("ask: %q (host asked %d times)", promptText(res), elicited.Load())
		}
		gets := p.received(t, "dep", "prompts/get")
		if len(gets) != 2 || !strings.Contains(gets[1], `"requestState":"prompt-state-1"`) || !strings.Contains(gets[1], `"inputResponses":{"who":{"action":"accept"`) {
			t.Fatalf("prompts/get the server got: %v", gets)
		}
	})
}

// A host at 2026-07-28 cannot be sent a request mid-get (its get is not a
// caller the server's request may go to): the server's input request
// during its prompts/get is refused, recorded, the host never asked, and
// the get fails in words. The same get from a 2025-11-25 host is relayed
// (TestWalk_UpstreamModernPromptInputRelayed).
func TestWalk_UpstreamModernPromptInputNotRelayedToAModernHost(t *testing.T) {
	walk(t, func(t *testing.T) {
		p := modernProxy(t, up.ProtocolModern, true)
		var elicited atomic.Int32
		s := startSDKHostAt(t, p.Proxy, modernVersion, modernOpts(&elicited, false))
		res, err := s.GetPrompt(context.Background(), &sdk.GetPromptParams{Name: "dep__ask"})
		if err == nil || !strings.Contains(err.Error(), "dep__ask") {
			t.Fatalf("a 2026-07-28 host's get whose server asks for input: %v %v; want it refused, naming the prompt", promptText(res), err)
		}
		if elicited.Load() != 0 {
			t.Fatal("the host was asked")
		}
		el := p.rowsOf(t, "elicitation/create")
		if len(el) != 1 || el[0].Decision != "deny" || !strings.Contains(el[0].Reason, "ones during which mcp-guard cannot ask their host (a 2026-07-28 host's get or read") {
			t.Fatalf("the server's input request in the ledger: %+v", el)
		}
		if gets := p.received(t, "dep", "prompts/get"); len(gets) != 1 {
			t.Fatalf("prompts/get the server got: %v", gets)
		}
	})
}

// Without allow_elicitation, a 2026-07-28 server's input_required fails
// the call: the host is never asked, the refusal is recorded, and the
// operator's log says which setting would allow it.
func TestWalk_UpstreamModernInputRefused(t *testing.T) {
	walk(t, func(t *testing.T) {
		p := modernProxy(t, up.ProtocolModern, false)
		var elicited atomic.Int32
		s := startSDKHostAt(t, p.Proxy, "2025-11-25", modernOpts(&elicited, true))
		res, err := s.CallTool(context.Background(), &sdk.CallToolParams{Name: "dep__deploy", Arguments: map[string]any{}})
		if err == nil && !res.IsError {
			t.Fatalf("deploy without allow_elicitation answered %+v", res)
		}
		eventually(t, "the log naming the setting that would allow the refused request", func() bool {
			return strings.Contains(p.log.String(), "which its config does not allow (see allow_sampling, allow_elicitation")
		})
		if elicited.Load() != 0 {
			t.Fatal("the host was asked")
		}
		eventually(t, "the refused elicitation in the ledger", func() bool {
			el := p.rowsOf(t, "elicitation/create")
			return len(el) == 1 && el[0].Decision == "deny"
		})
	})
}

// A host at 2026-07-28 in front of a 2026-07-28 server (reached with
// protocol auto): the server's input_required reaches the host with
// mcp-guard's own requestState (the server's stays inside mcp-guard); the
// host's retry continues the call; no initialize reaches the server.
func TestWalk_UpstreamModernModernHost(t *testing.T) {
	walk(t, func(t *testing.T) {
		p := modernProxy(t, up.ProtocolAuto, true)
		var elicited atomic.Int32
		s := startSDKHostAt(t, p.Proxy, modernVersion, modernOpts(&elicited, false))
		ctx := context.Background()
		first, err := s.CallTool(ctx, &sdk.CallToolParams{Name: "dep__deploy", Arguments: map[string]any{}})
		if err != nil || !first.NeedsInput() || !strings.HasPrefix(first.RequestState, "mcpg1.") || strings.Contains(first.RequestState, "deploy-state") {
			t.Fatalf("first answer: %v %+v", err, first)
		}
		var key string
		for k := range first.InputRequests {
			key = k
		}
		res, err := s.CallTool(ctx, &sdk.CallToolParams{Name: "dep__deploy", Arguments: map[string]any{}, RequestState: first.RequestState,
			InputResponses: sdk.InputResponseMap{key: &sdk.ElicitResult{Action: "accept", Content: map[string]any{"sure": true}}}})
		want := `deploy answered {"action":"accept","content":{"sure":true}} state deploy-state-1`
		if err != nil || res.IsError || textOf(res) != want {
			t.Fatalf("retry: %v %+v", err, res)
		}
		if sent := p.methodsSent(t, "dep"); slices.Contains(sent, "initialize") {
			t.Fatalf("auto sent initialize to a 2026-07-28 server: %v", sent)
		}
	})
}

// protocol = "auto" in front of a server that does not know
// server/discover falls back to initialize, and calls work.
func TestWalk_UpstreamAutoFallsBackToLegacy(t *testing.T) {
	walk(t, func(t *testing.T) {
		p := newMemProxyWith(t, mustRules(t, dbRules), func(o *Options) { o.Upstreams[0].Protocol = up.ProtocolAuto }, [2]string{"db", confirmTools})
		s := startSDKHost(t, p.Proxy, nil)
		if res, _ := sdkCall(t, s, "db__echo", map[string]any{"q": 1}); res.IsError {
			t.Fatalf("echo: %+v", res)
		}
		sent := p.methodsSent(t, "db")
		if len(sent) < 2 || sent[0] != "server/discover" || sent[1] != "initialize" {
			t.Fatalf("methods sent: %v", sent)
		}
	})
}

// A 2026-07-28 server whose tool changes under mcp-guard (pull changes
// echo): mcp-guard, listening for changes (subscriptions/listen), withdraws
// echo at once, and a call to it reaches nothing.
func TestWalk_UpstreamModernRugPullWithdraws(t *testing.T) {
	walk(t, func(t *testing.T) {
		p := modernProxy(t, up.ProtocolModern, false)
		s := startSDKHost(t, p.Proxy, nil)
		ctx := context.Background()
		if res, _ := sdkCall(t, s, "dep__echo", map[string]any{}); res.IsError {
			t.Fatal("echo before the rug pull failed")
		}
		sdkCall(t, s, "dep__pull", map[string]any{})
		listed := func() []string { return sdkToolNames(t, s) }
		eventually(t, "the changed tool withdrawn", func() bool { return !slices.Contains(listed(), "dep__echo") })
		before := len(p.received(t, "dep", "tools/call"))
		if res, err := s.CallTool(ctx, &sdk.CallToolParams{Name: "dep__echo", Arguments: map[string]any{}}); err == nil && !res.IsError {
			t.Fatalf("a call to the withdrawn tool answered %+v", res)
		}
		if n := len(p.received(t, "dep", "tools/call")); n != before {
			t.Fatal("the withdrawn tool's call reached the server")
		}
		if sent := p.methodsSent(t, "dep"); !slices.Contains(sent, "subscriptions/listen") {
			t.Fatalf("methods sent: %v", sent)
		}
	})
}

// The go-sdk 2026-07-28 test server over stateless streamable HTTP, at a
// URL in this process (real time, real TCP): mcp-guard lists and calls
// through it, the rules deny, its input_required reaches a legacy host
// and the answer goes back in the retry, and its rug pull, announced on
// the subscriptions/listen stream, withdraws the tool at once. (What each
// request carries in its headers is upstream's TestHTTP_Modern*.)
func TestUpstreamModernOverHTTP(t *testing.T) {
	srv := modernserver.New(false)
	ts := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, &sdk.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(ts.Close)
	access := gate.ClientAccess{Elicitation: config.AccessAllow}
	g := gate.New(mustRules(t, depRules), gate.WithClientAccess(map[string]gate.ClientAccess{"dep": access}))
	p := newMemProxyGate(t, g, func(o *Options) {
		o.Upstreams = []up.Spec{{Name: "dep", URL: ts.URL, Protocol: up.ProtocolAuto, Capabilities: access.Capabilities()}}
	})
	var elicited atomic.Int32
	s := startSDKHostAt(t, p.Proxy, "2025-11-25", modernOpts(&elicited, true))
	ctx := context.Background()
	listed := func() []string { return sdkToolNames(t, s) }
	listCallDeploy(t, s, &elicited)
	sdkCall(t, s, "dep__pull", map[string]any{})
	eventually(t, "the changed tool withdrawn", func() bool { return !slices.Contains(listed(), "dep__echo") })
	if res, err := s.CallTool(ctx, &sdk.CallToolParams{Name: "dep__echo", Arguments: map[string]any{}}); err == nil && !res.IsError {
		t.Fatalf("a call to the withdrawn tool answered %+v", res)
	}
	eventually(t, "echo done, drop denied, one deploy and one elicitation in the ledger", func() bool {
		ec, dr, d, el := p.rowsOf(t, "echo"), p.rowsOf(t, "drop"), p.rowsOf(t, "deploy"), p.rowsOf(t, "elicitation/create")
		return len(ec) == 2 && ec[0].State == "refused" && ec[1].State == "done" && len(dr) == 1 && dr[0].Decision == "deny" &&
			len(d) == 1 && d[0].State == "done" && len(el) == 1 && el[0].State == "done"
	})
}

// A 2026-07-28 server's prompt result reaches a legacy host without that
// revision's envelope (no resultType, no serverInfo of the server's), and
// a 2026-07-28 host with mcp-guard's envelope in place of the server's;
// every other byte the server's.
func TestWalk_UpstreamModernResultsInTheHostsRevision(t *testing.T) {
	walk(t, func(t *testing.T) {
		p := modernProxyMore(t, up.ProtocolModern, false, true)
		h := startMemHost(t, p.Proxy)
		legacy := string(h.request("1", "prompts/get", `{"name":"dep__greet","arguments":{"name":"<Ada>"}}`).Result)
		if !strings.Contains(legacy, `"messages":[`) || strings.Contains(legacy, "resultType") || strings.Contains(legacy, "serverInfo") {
			t.Fatalf("the legacy host's prompt result: %s", h.answerLine("1"))
		}
		modern := string(h.request("2", "prompts/get", `{"name":"dep__greet","arguments":{"name":"<Ada>"},`+modernMeta+`}`).Result)
		const env = `{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"mcp-guard","version":"test"}},"resultType":"complete",`
		if modern != env+legacy[1:] {
			t.Fatalf("the 2026-07-28 host's prompt result:\n got  %s\n want %s", modern, env+legacy[1:])
		}
		if gets := p.received(t, "dep", "prompts/get"); len(gets) != 2 {
			t.Fatalf("the server got %d gets, want 2: %v", len(gets), gets)
		}
	})
}

// A 2026-07-28 server's tools are pinned from the bytes it lists: a
// restart of mcp-guard on the same ledger finds the same pins (nothing
// changed, nothing withdrawn), and the host is shown the same tools.
func TestWalk_UpstreamModernPinsStableAcrossRestart(t *testing.T) {
	walk(t, func(t *testing.T) {
		p := modernProxy(t, "2026-07-28", true)
		want := []string{"dep__deploy", "dep__drop", "dep__echo", "dep__pull"}
		for i := range 2 {
			if i == 1 {
				p.restart(t)
			}
			var elicited atomic.Int32
			s := startSDKHostAt(t, p.Proxy, modernVersion, modernOpts(&elicited, true))
			if names := sdkToolNames(t, s); !slices.Equal(names, want) {
				t.Fatalf("start %d: tools %v, want %v", i, names, want)
			}
			s.Close()
		}
		evs, err := p.led.Events(context.Background(), 0, 1000)
		if err != nil {
			t.Fatal(err)
		}
		var added int
		for _, ev := range evs {
			switch ev.Kind {
			case "pin.added":
				added++
			case "pin.changed", "pin.withdrawn":
				t.Fatalf("a restart changed a pin: %+v", ev)
			}
		}
		if added != 6 { // four tools, a prompt and the instructions from server/discover
			t.Fatalf("pin.added events: %d, want 6", added)
		}
	})
}

// A tool whose x-mcp-header annotation is invalid (on an object, not a
// string, integer or boolean) is not dropped silently, as an SDK client
// drops it: it is pinned, withheld from the host with the reason the
// operator's report shows (mcp-guard tools), and a call to it is refused,
// recorded with why, and reaches nothing.
func TestWalk_BadHeaderAnnotationShownRefused(t *testing.T) {
	walk(t, func(t *testing.T) {
		script := `{"tools":[{"name":"ok","inputSchema":{"type":"object"}},
{"name":"bad","inputSchema":{"type":"object","properties":{"where":{"type":"object","x-mcp-header":"Where"}}}}]}`
		p := newMemProxy(t, allRules, [2]string{"hx", script})
		s := startSDKHost(t, p.Proxy, nil)
		if names := sdkToolNames(t, s); !slices.Equal(names, []string{"hx__ok"}) {
			t.Fatalf("host sees %v", names)
		}
		const why = `refused: cannot be shown to the host: inputSchema: property "where": x-mcp-header can only be applied to primitive types`
		if !slices.ContainsFunc(p.Tools(), func(r gate.ToolReport) bool {
			return r.Tool == "bad" && r.Exposed == "" && strings.HasPrefix(r.Hidden, why)
		}) {
			t.Fatalf("the report does not show bad hidden, saying why: %+v", p.Tools())
		}
		if res, err := callTool(s, "hx__bad", map[string]any{}); err == nil && !res.IsError {
			t.Fatalf("call to the refused tool answered %+v", res)
		}
		if n := len(p.received(t, "hx", "tools/call")); n != 0 {
			t.Fatalf("the refused tool's call reached the server (%d calls)", n)
		}
		if rows := p.rowsOf(t, "bad"); len(rows) != 1 || rows[0].Decision == "allow" || !strings.Contains(rows[0].Reason, "x-mcp-header") {
			t.Fatalf("the refused call's rows: %+v", rows)
		}
		pins, err := p.led.Pins(context.Background(), "hx")
		if err != nil || !slices.ContainsFunc(pins, func(pn ledger.Pin) bool { return pn.Tool == "bad" }) {
			t.Fatalf("the refused tool is not pinned: %v %+v", err, pins)
		}
	})
}

// A host's cancelled call to a 2026-07-28 url server ends the call's HTTP
// request, which is how that revision cancels (there is no session for a
// notifications/cancelled to reach): the server's handler sees its
// context end, and the ledger records the call cancelled. (Real time,
// real TCP.)
func TestUpstreamModernHTTPCancelEndsTheServersCall(t *testing.T) {
	srv := modernserver.New(false)
	started, ended := make(chan struct{}), make(chan struct{})
	sdk.AddTool(srv, &sdk.Tool{Name: "wait", Description: "Waits until cancelled."}, func(ctx context.Context, _ *sdk.CallToolRequest, _ map[string]any) (*sdk.CallToolResult, any, error) {
		close(started)
		<-ctx.Done()
		close(ended)
		return nil, nil, ctx.Err()
	})
	// The server's handler sees its request's end as the call's
	// (PropagateRequestCancellation).
	ts := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, &sdk.StreamableHTTPOptions{Stateless: true, PropagateRequestCancellation: true}))
	t.Cleanup(ts.Close)
	p := newMemProxyGate(t, gate.New(mustRules(t, depRules)), func(o *Options) {
		o.Upstreams = []up.Spec{{Name: "dep", URL: ts.URL, Protocol: up.ProtocolModern}}
	})
	s := startSDKHost(t, p.Proxy, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go s.CallTool(ctx, &sdk.CallToolParams{Name: "dep__wait", Arguments: map[string]any{}})
	for _, c := range []struct {
		what string
		ch   <-chan struct{}
	}{{"the server to have the call", started}, {"the server's handler to see the cancellation", ended}} {
		select {
		case <-c.ch:
		case <-time.After(10 * time.Second):
			t.Fatalf("waited 10s for %s", c.what)
		}
		cancel()
	}
	eventually(t, "the call recorded cancelled", func() bool {
		rows := p.rowsOf(t, "wait")
		return len(rows) == 1 && rows[0].State == "cancelled"
	})
}

// A 2026-07-28 url server that acknowledges each subscriptions/listen and
// ends it at once is listened to again after 1s, 2s, 4s (not every second,
// as when an acknowledged listen started the waits over), and the listing
// each new listen asks for is paced too; its tools work all the while.
// (Real time, real TCP: 11 seconds.)
func TestUpstreamModernEndedListenBacksOff(t *testing.T) {
	t.Parallel()
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return modernserver.New(false) }, &sdk.StreamableHTTPOptions{Stateless: true})
	var mu sync.Mutex
	var sent []string
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		_ = json.Unmarshal(body, &m)
		mu.Lock()
		sent = append(sent, m.Method)
		mu.Unlock()
		if m.Method == "subscriptions/listen" {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/subscriptions/acknowledged\"}\n\n")
			fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{}}\n\n", m.ID)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	count := func(method string) int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, s := range sent {
			if s == method {
				n++
			}
		}
		return n
	}
	p := newMemProxyGate(t, gate.New(mustRules(t, depRules)), func(o *Options) {
		o.Upstreams = []up.Spec{{Name: "dep", URL: ts.URL, Protocol: up.ProtocolModern}}
	})
	s := startSDKHost(t, p.Proxy, nil)
	eventually(t, "the first listen", func() bool { return count("subscriptions/listen") > 0 })
	time.Sleep(11 * time.Second)
	// Listens at 0, 1, 3 and 7s (up to a quarter sooner; the fifth at
	// 11.25s at the soonest); each acknowledged one after the first asks
	// for a listing, answered at 1, 3 and 7s at most.
	if n := count("subscriptions/listen"); n < 3 || n > 5 {
		t.Fatalf("%d listens in 11s, want 3 to 5", n)
	}
	if n := count("tools/list"); n > 5 {
		t.Fatalf("%d tools listings in 11s, want at most 5", n)
	}
	if _, text := sdkCall(t, s, "dep__echo", map[string]any{"q": "still"}); text != `echo {"q":"still"}` {
		t.Fatalf("echo: %q", text)
	}
}

// An MCP server built on the official go-sdk, served over its stateful
// streamable HTTP handler and spoken to at 2025-11-25 (no protocol set):
// an independent implementation of the server side. (Real time, real
// TCP.)
func TestUpstreamGoSDKServerOverHTTP(t *testing.T) {
	srv := sdk.NewServer(&sdk.Implementation{Name: "sdk-upstream", Version: "1"}, nil)
	type args struct {
		Text string `json:"text"`
	}
	sdk.AddTool(srv, &sdk.Tool{Name: "shout", Description: "Upper-cases text."}, func(_ context.Context, _ *sdk.CallToolRequest, a args) (*sdk.CallToolResult, any, error) {
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: strings.ToUpper(a.Text)}}}, nil, nil
	})
	ts := httptest.NewServer(sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	p := newMemProxyGate(t, gate.New(mustRules(t, allRules)), func(o *Options) {
		o.Upstreams = []up.Spec{{Name: "sdk", URL: ts.URL}}
	})
	s := startSDKHost(t, p.Proxy, nil)
	if _, text := sdkCall(t, s, "sdk__shout", map[string]any{"text": "quiet"}); text != "QUIET" {
		t.Fatalf("a call through mcp-guard to a go-sdk HTTP server: %q", text)
	}
}
