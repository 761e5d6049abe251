package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// serveHTTP serves srv over stateless streamable HTTP at addr (go-sdk's
// handler: 2026-07-28 needs Stateless), printing "listening ADDR" on
// stdout once it listens. Each POST body is appended to record as one
// line, with a "headers" member holding the request's Mcp-* headers, so a
// test sees what reached the server and how it was labelled (a GET or
// DELETE too, as {"http":"GET",...}). Every response carries an
// Mcp-Session-Id, which a 2026-07-28 client must not send back. Tool wait
// blocks until its call is cancelled (the request's HTTP request ends),
// then records {"event":"wait cancelled"}. Tool region's argument region
// is mirrored into an Mcp-Param-Region header (x-mcp-header): the server
// refuses a call without it. With endListen, every subscriptions/listen
// is acknowledged and then answered at once, ending it: a server that
// makes its client listen again and again.
func serveHTTP(srv *mcp.Server, addr, record string, endListen bool) {
	var note func(line string)
	mcp.AddTool(srv, &mcp.Tool{Name: "region", Description: "Says its region.", InputSchema: json.RawMessage(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}`)}, func(_ context.Context, req *mcp.CallToolRequest, in map[string]any) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("region %v", in["region"])}}}, nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "wait", Description: "Waits until cancelled."}, func(ctx context.Context, req *mcp.CallToolRequest, _ map[string]any) (*mcp.CallToolResult, any, error) {
		<-ctx.Done()
		note(`{"event":"wait cancelled"}`)
		return nil, nil, ctx.Err()
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true, PropagateRequestCancellation: true})
	var mu sync.Mutex
	var f *os.File
	if record != "" {
		var err error
		if f, err = os.OpenFile(record, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600); err != nil {
			log.Fatal(err)
		}
	}
	note = func(line string) {
		if f == nil {
			return
		}
		mu.Lock()
		f.Write(append([]byte(line), '\n'))
		mu.Unlock()
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		log.Fatal(err)
	}
	os.Stdout.WriteString("listening " + ln.Addr().String() + "\n")
	log.Fatal(http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hs := map[string]string{}
		for k, v := range r.Header {
			if strings.HasPrefix(k, "Mcp-") {
				hs[k] = strings.Join(v, ",")
			}
		}
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var m map[string]json.RawMessage
		if json.Unmarshal(body, &m) != nil || m == nil {
			m = map[string]json.RawMessage{}
		}
		m["headers"], _ = json.Marshal(hs)
		m["http"], _ = json.Marshal(r.Method)
		line, _ := json.Marshal(m)
		note(string(line))
		if endListen && string(m["method"]) == `"subscriptions/listen"` {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/subscriptions/acknowledged\"}\n\n")
			fmt.Fprintf(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{}}\n\n", m["id"])
			return
		}
		// A session ID no 2026-07-28 client may send back: a test sees
		// whether mcp-guard does.
		w.Header().Set("Mcp-Session-Id", "modernup-session")
		h.ServeHTTP(w, r)
	})))
}
