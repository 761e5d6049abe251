package main

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Protocol 2026-07-28 on the host side (PF7): a go-sdk 1.8 host that
// negotiates the stateless revision, over stdio and streamable HTTP, in
// front of a legacy upstream.

const modernVersion = "2026-07-28"

// modernClient is a go-sdk host that answers elicitations with accept
// {"sure":true}, counting them.
func modernClient(elicited *atomic.Int32, mrtr bool) *mcp.Client {
	opts := &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			elicited.Add(1)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"sure": true}}, nil
		},
	}
	if !mrtr {
		opts.MultiRoundTrip = &mcp.MultiRoundTripOptions{Disabled: true}
	}
	return mcp.NewClient(&mcp.Implementation{Name: "modern-host", Version: "1"}, opts)
}

// connectModern starts serve on cfg and connects client over stdio at
// 2026-07-28.
func (e *env) connectModern(cfg string, client *mcp.Client) *host {
	e.t.Helper()
	h := &host{stderr: &lockedBuffer{}}
	h.cmd = e.serveCmd(cfg)
	h.cmd.Stderr = h.stderr
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := client.Connect(ctx, &mcp.CommandTransport{Command: h.cmd, TerminateDuration: 5 * time.Second}, &mcp.ClientSessionOptions{ProtocolVersion: modernVersion})
	if err != nil {
		e.t.Fatalf("connect at %s: %v\n%s", modernVersion, err, h.stderr)
	}
	h.ClientSession = s
	e.t.Cleanup(func() {
		h.Close()
		if e.t.Failed() {
			e.t.Logf("mcp-guard stderr:\n%s", h.stderr)
		}
	})
	return h
}

// modernHTTPServe starts serve --http on cfg with the bearer token
// tok-modern-0123456789abcdef and returns its endpoint.
func (e *env) modernHTTPServe(cfg string) string {
	e.t.Helper()
	tokenFile := filepath.Join(e.dir, "token")
	writeFile(e.t, tokenFile, "tok-modern-0123456789abcdef\n")
	endpoint, _ := e.httpServe(cfg, "--http", "127.0.0.1:0", "--token-file", tokenFile)
	return endpoint
}
