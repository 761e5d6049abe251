package proxy

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-guard/mcp-guard/ledger"
)

// The walks of prompts and resources: listed, got, read and subscribed to
// by the go-sdk host as the rules say, each recorded and forwarded only
// when allowed.

// contentProxy is a proxy over the content tests' fake upstream "notes",
// with prompts, resources and templates, deciding by their rules read from
// TOML as serve reads them (testdata/content, shared with the binary's
// content tests); edit changes its options.
func contentProxy(t *testing.T, edit func(*Options)) *memProxy {
	t.Helper()
	return contentProxyOf(t, contentScript(t), edit)
}

// contentScript is the content tests' fake upstream's script.
func contentScript(t *testing.T) string {
	t.Helper()
	script, err := os.ReadFile("../testdata/content/script.json")
	if err != nil {
		t.Fatal(err)
	}
	return string(script)
}

// contentProxyOf is contentProxy with the fake upstream running script.
func contentProxyOf(t *testing.T, script string, edit func(*Options)) *memProxy {
	t.Helper()
	rules, err := os.ReadFile("../testdata/content/rules.toml")
	if err != nil {
		t.Fatal(err)
	}
	return newMemProxyWith(t, tomlRules(t, string(rules), "notes"), edit, [2]string{"notes", script})
}

// A subscription the rules allow is forwarded once and its updates reach
// the subscriber under the host URI; updates for URIs nobody subscribed to
// go nowhere; a subscription the rules deny never reaches the upstream;
// the last unsubscribe is forwarded; a resource whose definition changed
// cannot be subscribed to.
func TestWalk_SubscriptionsForwardedAndUpdatesRelayed(t *testing.T) {
	walk(t, func(t *testing.T) {
		p := contentProxy(t, nil)
		var mu sync.Mutex
		var updates []string
		s := startSDKHost(t, p.Proxy, &sdk.ClientOptions{ResourceUpdatedHandler: func(_ context.Context, r *sdk.ResourceUpdatedNotificationRequest) {
			mu.Lock()
			updates = append(updates, r.Params.URI)
			mu.Unlock()
		}})
		seen := func() []string { mu.Lock(); defer mu.Unlock(); return slices.Clone(updates) }
		ctx := context.Background()
		const notes = "mcp-guard://notes/file:///work/notes.txt"
		if err := s.Subscribe(ctx, &sdk.SubscribeParams{URI: notes}); err != nil {
			t.Fatalf("subscribe: %v", err)
		}
		for _, uri := range []string{"mcp-guard://notes/file:///work/private/key", "mcp-guard://notes/test://other", "mcp-guard://notes/file:///work/../etc/passwd"} {
			if err := s.Subscribe(ctx, &sdk.SubscribeParams{URI: uri}); err == nil {
				t.Fatalf("subscribe to %s was allowed", uri)
			}
		}
		if subs := p.received(t, "notes", "resources/subscribe"); len(subs) != 1 || !strings.Contains(subs[0], `"params":{"uri":"file:///work/notes.txt"}`) {
			t.Fatalf("upstream received subscriptions %v", subs)
		}
		// touch sends an update for test://other, then one for the
		// subscribed notes: they pass in order, so once the notes update is
		// here, an update for other would be here before it.
		sdkCall(t, s, "notes__touch", map[string]any{})
		eventually(t, "the update relayed", func() bool { return slices.Contains(seen(), notes) })
		if got := seen(); !slices.Equal(got, []string{notes}) {
			t.Fatalf("host received updates %v; want only %s", got, notes)
		}
		if err := s.Unsubscribe(ctx, &sdk.UnsubscribeParams{URI: notes}); err != nil {
			t.Fatalf("unsubscribe: %v", err)
		}
		eventually(t, "the unsubscribe forwarded", func() bool { return len(p.received(t, "notes", "resources/unsubscribe")) == 1 })

		sdkCall(t, s, "notes__pull", map[string]any{})
		eventually(t, "the changed resource withdrawn", func() bool {
			lr, err := s.ListResources(ctx, nil)
			return err == nil && !slices.ContainsFunc(lr.Resources, func(r *sdk.Resource) bool { return r.URI == notes })
		})
		if err := s.Subscribe(ctx, &sdk.SubscribeParams{URI: notes}); err == nil || !strings.Contains(err.Error(), "neither a resource mcp-guard exposes") {
			t.Fatalf("subscribe to a withdrawn resource: %v", err)
		}
		if n := len(p.received(t, "notes", "resources/subscribe")); n != 1 {
			t.Fatalf("a subscription to a withdrawn resource reached the upstream (%d subscribes)", n)
		}
	})
}

// A read whose result is over limits.result_bytes is recorded with the
// result's digest and not passed to the host; a smaller one passes.
func TestWalk_ContentOversizedResultRefused(t *testing.T) {
	walk(t, func(t *testing.T) {
		p := contentProxy(t, func(o *Options) { o.Limits.ResultBytes = 200 })
		s := startSDKHost(t, p.Proxy, nil)
		ctx := context.Background()
		if _, err := s.ReadResource(ctx, &sdk.ReadResourceParams{URI: "mcp-guard://notes/file:///work/notes.txt"}); err != nil {
			t.Fatalf("small read: %v", err)
		}
		long := "mcp-guard://notes/file:///work/" + strings.Repeat("a", 200)
		if _, err := s.ReadResource(ctx, &sdk.ReadResourceParams{URI: long}); err == nil || !strings.Contains(err.Error(), "over limits.result_bytes (200)") {
			t.Fatalf("large read: %v", err)
		}
		eventually(t, "the refused result recorded", func() bool {
			var rows []ledger.CallRow
			for _, r := range p.calls(t) {
				if r.Kind == ledger.KindResource {
					rows = append(rows, r)
				}
			}
			return len(rows) == 2 && rows[0].State == "done" && rows[0].IsError && rows[0].ResultDigest != "" && strings.Contains(rows[0].Err, "result_bytes")
		})
	})
}

// A host on the 2026-07-28 protocol lists, gets and reads the same way.
func TestWalk_ContentModernHost(t *testing.T) {
	walk(t, func(t *testing.T) {
		p := contentProxy(t, nil)
		s := startSDKHostAt(t, p.Proxy, "2026-07-28", nil)
		ctx := context.Background()
		lp, err := s.ListPrompts(ctx, nil)
		if err != nil || !slices.ContainsFunc(lp.Prompts, func(pr *sdk.Prompt) bool { return pr.Name == "notes__simple-greet" }) {
			t.Fatalf("prompts: %v %+v", err, lp)
		}
		res, err := s.GetPrompt(ctx, &sdk.GetPromptParams{Name: "notes__simple-args", Arguments: map[string]string{"who": "Ada"}})
		if err != nil || len(res.Messages) == 0 {
			t.Fatalf("get: %v %+v", err, res)
		}
		if tc, ok := res.Messages[0].Content.(*sdk.TextContent); !ok || !strings.Contains(tc.Text, `{"who":"Ada"}`) {
			t.Fatalf("get: %+v", res.Messages[0].Content)
		}
		if _, err := s.GetPrompt(ctx, &sdk.GetPromptParams{Name: "notes__secret"}); err == nil {
			t.Fatal("denied get allowed")
		}
		rr, err := s.ReadResource(ctx, &sdk.ReadResourceParams{URI: "mcp-guard://notes/file:///work/notes.txt"})
		if err != nil || rr.Contents[0].Text != "read file:///work/notes.txt" {
			t.Fatalf("read: %v %+v", err, rr)
		}
		if _, err := s.ReadResource(ctx, &sdk.ReadResourceParams{URI: "mcp-guard://notes/file:///work/private/key"}); err == nil {
			t.Fatal("denied read allowed")
		}
		if n, m := len(p.received(t, "notes", "prompts/get")), len(p.received(t, "notes", "resources/read")); n != 1 || m != 1 {
			t.Fatalf("upstream received %d gets and %d reads; want 1 and 1", n, m)
		}
	})
}

// A host on the 2026-07-28 protocol subscribes in its subscriptions/listen:
// each resource it names is decided by the rules as a resources/subscribe
// is. A denied one refuses the listen, naming the rule, and reaches
// nothing; an allowed one is subscribed upstream and its updates reach the
// go-sdk host, until the host ends the listen. (The go-sdk's Subscribe does
// not wait for the listen's answer, so the refusal is read on the raw
// host.)
func TestWalk_ModernHostSubscriptionsDecidedByTheRules(t *testing.T) {
	walk(t, func(t *testing.T) {
		p := contentProxy(t, nil)
		raw := startMemHost(t, p.Proxy)
		const modern = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
		for i, uri := range []string{"mcp-guard://notes/file:///work/private/key", "mcp-guard://notes/test://other"} {
			r := raw.request(fmt.Sprint("L", i), "subscriptions/listen", `{"notifications":{"resourceSubscriptions":["`+uri+`"]},`+modern+`}`)
			if r.Error == nil || !strings.Contains(r.Error.Message, "no subscription to") || !strings.Contains(r.Error.Message, uri) {
				t.Fatalf("listen to %s: %+v %s; want it refused", uri, r.Error, r.Result)
			}
		}
		if subs := p.received(t, "notes", "resources/subscribe"); len(subs) != 0 {
			t.Fatalf("refused subscriptions reached the upstream: %v", subs)
		}

		p = contentProxy(t, nil) // one stdio host per proxy
		var mu sync.Mutex
		var updates []string
		s := startSDKHostAt(t, p.Proxy, "2026-07-28", &sdk.ClientOptions{ResourceUpdatedHandler: func(_ context.Context, r *sdk.ResourceUpdatedNotificationRequest) {
			mu.Lock()
			updates = append(updates, r.Params.URI)
			mu.Unlock()
		}})
		const notes = "mcp-guard://notes/file:///work/notes.txt"
		if err := s.Subscribe(context.Background(), &sdk.SubscribeParams{URI: notes}); err != nil {
			t.Fatalf("subscribe: %v", err)
		}
		eventually(t, "the subscription forwarded", func() bool { return len(p.received(t, "notes", "resources/subscribe")) == 1 })
		sdkCall(t, s, "notes__touch", map[string]any{})
		eventually(t, "the update relayed", func() bool { mu.Lock(); defer mu.Unlock(); return slices.Contains(updates, notes) })
		// The host unsubscribing ends its listen, and the subscription
		// ends upstream with it while the connection goes on.
		if err := s.Unsubscribe(context.Background(), &sdk.UnsubscribeParams{URI: notes}); err != nil {
			t.Fatalf("unsubscribe: %v", err)
		}
		eventually(t, "the subscription ended upstream with the listen", func() bool { return len(p.received(t, "notes", "resources/unsubscribe")) == 1 })
	})
}

// A host on the 2026-07-28 protocol over streamable HTTP has no session:
// its subscriptions/listen subscribes as itself. Each resource it names is
// decided by the rules as a resources/subscribe is: a denied one refuses
// the listen and reaches nothing; an allowed one is subscribed upstream,
// its updates reach the go-sdk host on the listen's stream, and the
// subscription ends upstream with the listen.
func TestWalk_ModernHTTPHostSubscriptionsDecidedByTheRules(t *testing.T) {
	walk(t, func(t *testing.T) {
		p := contentProxy(t, nil)
		h := startHTTPHost(t, p.Proxy)
		const modern = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
		for i, uri := range []string{"mcp-guard://notes/file:///work/private/key", "mcp-guard://notes/test://other"} {
			_, body := h.postModern("subscriptions/listen", fmt.Sprintf(`{"jsonrpc":"2.0","id":"L%d","method":"subscriptions/listen","params":{"notifications":{"resourceSubscriptions":["%s"]},%s}}`, i, uri, modern))
			if !strings.Contains(body, `"error"`) || !strings.Contains(body, "no subscription to") || !strings.Contains(body, uri) {
				t.Fatalf("listen to %s answered %s; want it refused", uri, body)
			}
		}
		if subs := p.received(t, "notes", "resources/subscribe"); len(subs) != 0 {
			t.Fatalf("refused subscriptions reached the upstream: %v", subs)
		}

		var mu sync.Mutex
		var updates []string
		s := h.sdk(t, "2026-07-28", &sdk.ClientOptions{ResourceUpdatedHandler: func(_ context.Context, r *sdk.ResourceUpdatedNotificationRequest) {
			mu.Lock()
			updates = append(updates, r.Params.URI)
			mu.Unlock()
		}})
		const notes = "mcp-guard://notes/file:///work/notes.txt"
		if err := s.Subscribe(context.Background(), &sdk.SubscribeParams{URI: notes}); err != nil {
			t.Fatalf("subscribe: %v", err)
		}
		eventually(t, "the subscription forwarded", func() bool { return len(p.received(t, "notes", "resources/subscribe")) == 1 })
		sdkCall(t, s, "notes__touch", map[string]any{})
		eventually(t, "the update relayed", func() bool { mu.Lock(); defer mu.Unlock(); return slices.Contains(updates, notes) })
		s.Close()
		eventually(t, "the subscription ended upstream with the listen", func() bool { return len(p.received(t, "notes", "resources/unsubscribe")) == 1 })
	})
}

// Over HTTP each host session gets only the updates it subscribed to.
func TestWalk_UpdatesReachOnlyTheSubscribedSession(t *testing.T) {
	walk(t, func(t *testing.T) {
		// mark sends one update for a URI both sessions subscribe to last:
		// the signal that whatever touch made the relay send has arrived.
		script := strings.Replace(contentScript(t), `"calls":{`, `"calls":{
 "mark":{"do":"notify","lines":["{\"jsonrpc\":\"2.0\",\"method\":\"notifications/resources/updated\",\"params\":{\"uri\":\"file:///work/mark.txt\"}}"]},`, 1)
		script = strings.Replace(script, `"tools":[`, `"tools":[{"name":"mark","inputSchema":{"type":"object"}},`, 1)
		h := startHTTPHost(t, contentProxyOf(t, script, nil).Proxy)
		type seen struct {
			s   *sdk.ClientSession
			got chan string
		}
		connect := func() seen {
			got := make(chan string, 16)
			return seen{h.sdk(t, "2025-11-25", &sdk.ClientOptions{
				ResourceUpdatedHandler: func(_ context.Context, r *sdk.ResourceUpdatedNotificationRequest) { got <- r.Params.URI },
			}), got}
		}
		a, b := connect(), connect()
		ctx := context.Background()
		const notes = "mcp-guard://notes/file:///work/notes.txt"
		if err := a.s.Subscribe(ctx, &sdk.SubscribeParams{URI: notes}); err != nil {
			t.Fatal(err)
		}
		if _, err := callTool(b.s, "notes__touch", map[string]any{}); err != nil {
			t.Fatal(err)
		}
		select {
		case uri := <-a.got:
			if uri != notes {
				t.Fatalf("subscriber got an update for %s", uri)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the subscriber got no update")
		}
		// Both subscribe to mark.txt; its update is relayed after touch's
		// (one relay per upstream, in order), so it is the next each
		// session gets.
		const mark = "mcp-guard://notes/file:///work/mark.txt"
		for _, x := range []seen{a, b} {
			if err := x.s.Subscribe(ctx, &sdk.SubscribeParams{URI: mark}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := callTool(b.s, "notes__mark", map[string]any{}); err != nil {
			t.Fatal(err)
		}
		for name, x := range map[string]seen{"the subscriber": a, "a session that did not subscribe to notes": b} {
			select {
			case uri := <-x.got:
				if uri != mark {
					t.Fatalf("%s got an update for %s before the one for mark.txt", name, uri)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("%s got no update for mark.txt", name)
			}
		}
	})
}
