package proxy

import (
	"context"
	"io"
	"slices"
	"strings"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// startSDKHost connects the official go-sdk client, an independent host,
// to p.ServeStdio over in-memory pipes, with opts (its handlers for what
// mcp-guard asks of it) and its own roots (which must never reach an
// upstream), speaking 2025-11-25. The session ends with the test.
func startSDKHost(t *testing.T, p *Proxy, opts *sdk.ClientOptions, roots ...string) *sdk.ClientSession {
	t.Helper()
	return startSDKHostAt(t, p, "2025-11-25", opts, roots...)
}

// startSDKHostAt is startSDKHost with the host speaking protocol version
// (the go-sdk's latest when "").
func startSDKHostAt(t *testing.T, p *Proxy, version string, opts *sdk.ClientOptions, roots ...string) *sdk.ClientSession {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	served := make(chan error, 1)
	go func() { served <- p.ServeStdio(ctx, inR, outW); outW.Close() }()
	c := sdk.NewClient(&sdk.Implementation{Name: "sdk-host", Version: "1"}, opts)
	for _, r := range roots {
		//lint:ignore SA1019 a host's own roots, which mcp-guard keeps from upstreams, while SEP-2577's window keeps them in the protocol
		c.AddRoots(&sdk.Root{URI: r, Name: "the host's own root"})
	}
	var so *sdk.ClientSessionOptions
	if version != "" {
		so = &sdk.ClientSessionOptions{ProtocolVersion: version}
	}
	s, err := c.Connect(ctx, &sdk.IOTransport{Reader: outR, Writer: inW}, so)
	if err != nil {
		cancel()
		t.Fatalf("the go-sdk host did not connect: %v", err)
	}
	t.Cleanup(func() {
		s.Close()
		inW.Close()
		cancel()
		<-served
	})
	return s
}

// sdkCall calls an exposed tool and returns its text, failing the test on
// a protocol error.
func sdkCall(t *testing.T, s *sdk.ClientSession, name string, args any) (*sdk.CallToolResult, string) {
	t.Helper()
	res, err := s.CallTool(context.Background(), &sdk.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", name, err)
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*sdk.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return res, b.String()
}

// sdkPromptNames are the names of the prompts s is shown, sorted.
func sdkPromptNames(t *testing.T, s *sdk.ClientSession) []string {
	t.Helper()
	lp, err := s.ListPrompts(context.Background(), nil)
	if err != nil {
		t.Fatalf("prompts/list: %v", err)
	}
	var names []string
	for _, pr := range lp.Prompts {
		names = append(names, pr.Name)
	}
	slices.Sort(names)
	return names
}
