package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// seenRequest is one HTTP request a test server got: its verb, its Mcp-*
// headers and its JSON-RPC method.
type seenRequest struct {
	verb, method string
	headers      http.Header
}

// A 2026-07-28 url server (the official go-sdk's, stateless) is spoken to
// without a session: the Mcp-Session-Id its answers carry is never sent
// back, and no GET stream is opened. Every POST says in its headers what
// its body is (Mcp-Method, and Mcp-Name for a call), and a tool parameter
// marked x-mcp-header goes in its Mcp-Param-* header too, which the server
// requires.
func TestHTTP_ModernServerGetsTheStandardHeadersAndNoSession(t *testing.T) {
	srv := sdk.NewServer(&sdk.Implementation{Name: "gosdk", Version: "1"}, nil)
	sdk.AddTool(srv, &sdk.Tool{Name: "echo"}, func(_ context.Context, _ *sdk.CallToolRequest, in map[string]any) (*sdk.CallToolResult, any, error) {
		b, _ := json.Marshal(in)
		return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "echo " + string(b)}}}, nil, nil
	})
	sdk.AddTool(srv, &sdk.Tool{Name: "region", InputSchema: json.RawMessage(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}`)},
		func(_ context.Context, _ *sdk.CallToolRequest, in map[string]any) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: fmt.Sprintf("region %v", in["region"])}}}, nil, nil
		})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, &sdk.StreamableHTTPOptions{Stateless: true})
	var mu sync.Mutex
	var seen []seenRequest
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var m struct{ Method string }
		json.Unmarshal(body, &m)
		hs := http.Header{}
		for k, v := range r.Header {
			if strings.HasPrefix(k, "Mcp-") {
				hs[k] = v
			}
		}
		mu.Lock()
		seen = append(seen, seenRequest{r.Method, m.Method, hs})
		mu.Unlock()
		w.Header().Set("Mcp-Session-Id", "must-not-come-back")
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)

	u, err := startFakeHTTP(t, Spec{Name: "modern", URL: ts.URL, Protocol: ProtocolModern})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// The listing is where the client learns which parameters go in headers.
	if err := u.List(ctx, "tools/list", func(res json.RawMessage) (string, error) {
		var page struct {
			NextCursor string `json:"nextCursor"`
		}
		return page.NextCursor, json.Unmarshal(res, &page)
	}); err != nil {
		t.Fatal(err)
	}
	if res, err := u.CallTool(ctx, "echo", []byte(`{"a":1}`), nil, nil); err != nil || !strings.Contains(string(res), `echo {\"a\":1}`) {
		t.Fatalf("echo: %s %v", res, err)
	}
	if res, err := u.CallTool(ctx, "region", []byte(`{"region":"eu-west"}`), nil, nil); err != nil || !strings.Contains(string(res), "region eu-west") {
		t.Fatalf("region (the server needs its Mcp-Param-Region header): %s %v", res, err)
	}

	mu.Lock()
	defer mu.Unlock()
	calls := 0
	for i, r := range seen {
		if r.verb != http.MethodPost {
			t.Fatalf("request %d is a %s: a 2026-07-28 client opens no GET stream and deletes no session", i, r.verb)
		}
		if s := r.headers.Get("Mcp-Session-Id"); s != "" {
			t.Fatalf("request %d (%s) sent the session id %q back", i, r.method, s)
		}
		if got := r.headers.Get("Mcp-Method"); got != r.method {
			t.Fatalf("request %d: Mcp-Method %q for a body of method %q", i, got, r.method)
		}
		if r.method == "tools/call" {
			calls++
			if r.headers.Get("Mcp-Name") == "" {
				t.Fatalf("request %d, a tools/call, has no Mcp-Name", i)
			}
		}
	}
	if calls != 2 {
		t.Fatalf("the server got %d calls, want 2: %+v", calls, seen)
	}
}

// A cancelled call to a 2026-07-28 url server ends the call's HTTP
// request, which is how that revision cancels (there is no session for a
// notifications/cancelled to reach): the server's handler sees it.
func TestHTTP_ModernCancelEndsTheServersCall(t *testing.T) {
	srv := sdk.NewServer(&sdk.Implementation{Name: "gosdk", Version: "1"}, nil)
	started, ended := make(chan struct{}), make(chan struct{})
	sdk.AddTool(srv, &sdk.Tool{Name: "wait"}, func(ctx context.Context, _ *sdk.CallToolRequest, _ map[string]any) (*sdk.CallToolResult, any, error) {
		close(started)
		<-ctx.Done()
		close(ended)
		return nil, nil, ctx.Err()
	})
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, &sdk.StreamableHTTPOptions{Stateless: true, PropagateRequestCancellation: true})
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	u, err := startFakeHTTP(t, Spec{Name: "modern", URL: ts.URL, Protocol: ProtocolModern})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := u.CallTool(ctx, "wait", []byte(`{}`), nil, nil)
		done <- err
	}()
	select {
	case <-started:
	case <-time.After(10 * time.Second):
		t.Fatal("the server never got the call")
	}
	cancel()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the server's handler did not see the call cancelled")
	}
	if err := <-done; err == nil {
		t.Fatal("the cancelled call succeeded")
	}
}
