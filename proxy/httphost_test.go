package proxy

import (
	"bufio"
	"context"
	"encoding/json"
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

// httpHost is a host speaking JSON-RPC to p over streamable HTTP
// (p.ServeHTTP) in memory: the endpoint, the client that reaches it, and
// the session it is in ("" before initialize, and at 2026-07-28).
type httpHost struct {
	t      *testing.T
	url    string
	client *http.Client
	sid    string
}

// initBody is a 2025-11-25 host's initialize, declaring nothing.
const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// startHTTPHost serves p over streamable HTTP on an in-memory listener
// until the test ends.
func startHTTPHost(t *testing.T, p *Proxy) *httpHost {
	t.Helper()
	return startHTTPHostWith(t, p, HTTPOptions{})
}

// startHTTPHostWith is startHTTPHost with the endpoint's options o.
func startHTTPHostWith(t *testing.T, p *Proxy, o HTTPOptions) *httpHost {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ln := &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
	tr := &http.Transport{DialContext: ln.dial}
	served := make(chan error, 1)
	go func() { served <- p.ServeHTTP(ctx, ln, o) }()
	t.Cleanup(func() {
		cancel()
		tr.CloseIdleConnections()
		if err := <-served; err != nil {
			t.Errorf("ServeHTTP: %v", err)
		}
		ln.Close()
	})
	return &httpHost{t: t, url: "http://127.0.0.1/mcp", client: &http.Client{Transport: tr}}
}

// session is a new host session of the same endpoint, initialized with
// the initialize request init.
func (h *httpHost) session(init string) *httpHost {
	h.t.Helper()
	n := &httpHost{t: h.t, url: h.url, client: h.client}
	resp := n.do(http.MethodPost, init, nil)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	n.sid = resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || n.sid == "" {
		h.t.Fatalf("initialize over HTTP: %d, session %q", resp.StatusCode, n.sid)
	}
	if code, _ := n.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`); code != http.StatusAccepted {
		h.t.Fatalf("notifications/initialized: HTTP %d", code)
	}
	return n
}

// do sends one HTTP request of the session; a header given "" is removed,
// "Host" sets the request's Host, and a body starting "chunked:" is sent
// without a length.
func (h *httpHost) do(method, body string, header map[string]string) *http.Response {
	h.t.Helper()
	resp, err := h.send(method, body, header)
	if err != nil {
		h.t.Fatal(err)
	}
	return resp
}

// send is do for any goroutine: it returns the error.
func (h *httpHost) send(method, body string, header map[string]string) (*http.Response, error) {
	var r io.Reader = strings.NewReader(body)
	if b, ok := strings.CutPrefix(body, "chunked:"); ok {
		r = io.MultiReader(strings.NewReader(b)) // no length: sent chunked
	}
	req, err := http.NewRequest(method, h.url, r)
	if err != nil {
		return nil, err
	}
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	if h.sid != "" {
		req.Header.Set("Mcp-Session-Id", h.sid)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	for k, v := range header {
		if k == "Host" {
			req.Host = v
			continue
		}
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	return h.client.Do(req)
}

// post sends one body in the session and returns the status and every
// JSON-RPC message of the answer, whether JSON or an event stream.
func (h *httpHost) post(body string) (int, []rpcMsg) {
	h.t.Helper()
	resp := h.do(http.MethodPost, body, nil)
	defer resp.Body.Close()
	return resp.StatusCode, readMessages(resp)
}

// rawAnswer is one POST's response as the host reads it.
type rawAnswer struct {
	code        int
	contentType string
	body        string
}

// postRaw sends one body in the session and returns the response as sent.
func (h *httpHost) postRaw(body string) rawAnswer {
	h.t.Helper()
	resp := h.do(http.MethodPost, body, nil)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		h.t.Fatal(err)
	}
	return rawAnswer{resp.StatusCode, resp.Header.Get("Content-Type"), string(b)}
}

// postModern sends body, a 2026-07-28 request of method, as one POST with
// no session, and returns what came back within ten seconds (the
// bubble's): a request held open (a listen acknowledged) is cut then.
func (h *httpHost) postModern(method, body string) (int, string) {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.url, strings.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	resp, err := h.client.Do(req)
	if err != nil {
		h.t.Fatalf("POST: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// rpcMsg is one JSON-RPC message a host read, and its line.
type rpcMsg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	line   string
}

// readMessages is every JSON-RPC message of an answer to a POST, whether
// JSON or an event stream.
func readMessages(resp *http.Response) []rpcMsg {
	var msgs []rpcMsg
	add := func(line string) {
		var m rpcMsg
		if json.Unmarshal([]byte(line), &m) == nil {
			m.line = line
			msgs = append(msgs, m)
		}
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				add(d)
			}
		}
	} else {
		b, _ := io.ReadAll(resp.Body)
		if len(strings.TrimSpace(string(b))) > 0 {
			add(strings.TrimSpace(string(b)))
		}
	}
	return msgs
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
