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
// test sees what reached the server and how it was labelled.
//
// Over HTTP it has one more tool, region, whose argument region is
// mirrored into an Mcp-Param-Region header (x-mcp-header): the server
// refuses a call without it.
func serveHTTP(srv *mcp.Server, addr, record string) {
	mcp.AddTool(srv, &mcp.Tool{Name: "region", Description: "Says its region.", InputSchema: json.RawMessage(`{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"}}}`)}, func(_ context.Context, req *mcp.CallToolRequest, in map[string]any) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("region %v", in["region"])}}}, nil, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true})
	var mu sync.Mutex
	var f *os.File
	if record != "" {
		var err error
		if f, err = os.OpenFile(record, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600); err != nil {
			log.Fatal(err)
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		log.Fatal(err)
	}
	os.Stdout.WriteString("listening " + ln.Addr().String() + "\n")
	log.Fatal(http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f != nil && r.Method == http.MethodPost {
			body, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
			hs := map[string]string{}
			for k, v := range r.Header {
				if strings.HasPrefix(k, "Mcp-") {
					hs[k] = strings.Join(v, ",")
				}
			}
			var m map[string]json.RawMessage
			if json.Unmarshal(body, &m) == nil {
				m["headers"], _ = json.Marshal(hs)
				body, _ = json.Marshal(m)
			}
			mu.Lock()
			f.Write(append(bytes.TrimSpace(body), '\n'))
			mu.Unlock()
		}
		h.ServeHTTP(w, r)
	})))
}
