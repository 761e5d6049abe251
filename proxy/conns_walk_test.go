package proxy

import (
	"context"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// A change to what hosts are shown is announced to every connected host
// that finished its initialize, and a 2026-07-28 subscriptions/listen
// takes only the kinds it opted in to, each naming the listen. Here a
// slow server joins late with a tool and a prompt: a 2025 HTTP session
// hears of both lists; a listen that opted in to tools hears of the tools
// only; a stdio host that never initialized hears of neither.
func TestWalk_ListChangesReachWhoOptedIn(t *testing.T) {
	walk(t, func(t *testing.T) {
		p := newMemProxyWith(t, mustRules(t, allRules), startupOpts(500*time.Millisecond),
			[2]string{"good", `{"tools":[{"name":"ping_me","inputSchema":{"type":"object"}}]}`},
			[2]string{"slow", `{"stall":{"initialize":2500},"tools":[{"name":"late_tool","inputSchema":{"type":"object"}}],"prompts":[{"name":"late_prompt"}]}`})
		h := startHTTPHost(t, p.Proxy)
		var tools, prompts atomic.Int32
		h.sdk(t, "2025-11-25", &sdk.ClientOptions{
			ToolListChangedHandler:   func(context.Context, *sdk.ToolListChangedRequest) { tools.Add(1) },
			PromptListChangedHandler: func(context.Context, *sdk.PromptListChangedRequest) { prompts.Add(1) },
		})
		bare := startMemHostBare(t, p.Proxy)
		listened := make(chan string, 1)
		go func() {
			_, body := h.postModern("subscriptions/listen", `{"jsonrpc":"2.0","id":"L1","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true},`+modernMeta+`}}`)
			listened <- body
		}()
		eventually(t, "both list changes reached the 2025 session", func() bool { return tools.Load() > 0 && prompts.Load() > 0 })
		body := <-listened // cut after ten seconds: the listen is held open
		for _, want := range []string{
			`"method":"notifications/subscriptions/acknowledged"`,
			`{"jsonrpc":"2.0","method":"notifications/tools/list_changed","params":{"_meta":{"io.modelcontextprotocol/subscriptionId":"L1"}}}`,
		} {
			if !strings.Contains(body, want) {
				t.Fatalf("the listen's stream lacks %s:\n%s", want, body)
			}
		}
		if strings.Contains(body, "prompts/list_changed") {
			t.Fatalf("a listen that opted in to tools only heard of prompts:\n%s", body)
		}
		bare.mu.Lock()
		defer bare.mu.Unlock()
		if len(bare.notes) != 0 {
			t.Fatalf("a stdio host that never initialized was sent %v", bare.notes)
		}
	})
}

// A 2026-07-28 tools/call of a tool whose input schema mirrors an argument
// into a header (x-mcp-header, SEP-2243) must carry that header with the
// argument's value: one that says another value, or leaves it out, is
// refused (400, the header mismatch error) and reaches neither the ledger
// nor the upstream, as the tool was shown to the host. With the header
// that matches, the same call is served.
func TestWalk_ModernHTTPParamHeadersMustSayWhatTheArgumentsSay(t *testing.T) {
	walk(t, func(t *testing.T) {
		p := newMemProxy(t, allRules, [2]string{"geo", `{"tools":[{"name":"where","inputSchema":{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}}]}`})
		h := modernHTTPHost(t, p.Proxy)
		const body = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"geo__where","arguments":{"region":"eu"},` + modernMeta + `}}`
		post := func(region string) (int, string) {
			t.Helper()
			hdr := map[string]string{"Mcp-Protocol-Version": modernVersion, "Mcp-Method": "tools/call", "Mcp-Name": "geo__where", "Mcp-Param-Region": region}
			resp := h.do(http.MethodPost, body, hdr)
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(b)
		}
		for _, region := range []string{"us", ""} {
			if code, got := post(region); code != http.StatusBadRequest || !strings.Contains(got, "-32020") || !strings.Contains(got, "Mcp-Param-Region") {
				t.Fatalf("Mcp-Param-Region %q: HTTP %d %s; want 400 and the header mismatch error naming it", region, code, got)
			}
		}
		if n := len(p.received(t, "geo", "tools/call")); n != 0 {
			t.Fatalf("a call whose header does not match reached the upstream (%d)", n)
		}
		if rows := p.calls(t); len(rows) != 0 {
			t.Fatalf("a call whose header does not match was recorded: %+v", rows)
		}
		if code, got := post("eu"); code != http.StatusOK || !strings.Contains(got, `"result"`) {
			t.Fatalf("the call with the matching header: HTTP %d %s", code, got)
		}
		if n := len(p.received(t, "geo", "tools/call")); n != 1 {
			t.Fatalf("the call with the matching header reached the upstream %d times, want 1", n)
		}
	})
}
