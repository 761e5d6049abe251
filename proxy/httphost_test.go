package proxy

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// pipeListener hands http.Server the server ends of in-memory connections
// its client dials: an HTTP host with no socket, which runs in a synctest
// bubble.
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error   { l.once.Do(func() { close(l.done) }); return nil }
func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

func (l *pipeListener) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	ours, theirs := net.Pipe()
	select {
	case l.conns <- theirs:
		return ours, nil
	case <-l.done:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "127.0.0.1:80" }

// httpHost is p served over streamable HTTP in memory: its endpoint and
// the client that reaches it.
type httpHost struct {
	url    string
	client *http.Client
}

// startHTTPHost serves p over streamable HTTP (p.ServeHTTP) on an
// in-memory listener until the test ends.
func startHTTPHost(t *testing.T, p *Proxy) *httpHost {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ln := &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
	tr := &http.Transport{DialContext: ln.dial}
	served := make(chan error, 1)
	go func() { served <- p.ServeHTTP(ctx, ln, HTTPOptions{}) }()
	t.Cleanup(func() {
		cancel()
		tr.CloseIdleConnections()
		if err := <-served; err != nil {
			t.Errorf("ServeHTTP: %v", err)
		}
		ln.Close()
	})
	return &httpHost{url: "http://127.0.0.1/mcp", client: &http.Client{Transport: tr}}
}

// post sends body, a request of method, as one host POST at protocol
// version (its headers) and returns what came back within ten seconds
// (the bubble's).
func (h *httpHost) post(t *testing.T, version, method, body string) (int, string) {
	t.Helper()
	// A request held open (a listen acknowledged) is cut after a while:
	// what it sent by then is its answer.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", version)
	req.Header.Set("Mcp-Method", method)
	resp, err := h.client.Do(req)
	if err != nil {
		t.Fatalf("POST: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// sdk connects the go-sdk client, an independent host, at protocol
// version; the session ends with the test.
func (h *httpHost) sdk(t *testing.T, version string, opts *sdk.ClientOptions) *sdk.ClientSession {
	t.Helper()
	c := sdk.NewClient(&sdk.Implementation{Name: "sdk-http-host", Version: "1"}, opts)
	s, err := c.Connect(context.Background(), &sdk.StreamableClientTransport{Endpoint: h.url, HTTPClient: h.client}, &sdk.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("the go-sdk host did not connect over HTTP: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}
