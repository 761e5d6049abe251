package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// teeTransport keeps every response body the host receives, as bytes.
type teeTransport struct {
	mu  sync.Mutex
	got bytes.Buffer
}

func (t *teeTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.TeeReader(resp.Body, lockedWriterTo{t}), resp.Body}
	return resp, nil
}

type lockedWriterTo struct{ t *teeTransport }

func (w lockedWriterTo) Write(b []byte) (int, error) {
	w.t.mu.Lock()
	defer w.t.mu.Unlock()
	return w.t.got.Write(b)
}

func (t *teeTransport) bytes() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	return bytes.Clone(t.got.Bytes())
}

// T1 over the HTTP host: every byte the host's HTTP client receives
// (JSON bodies and event streams) is free of the secret; the answers carry
// the redaction.
func TestSecrets_RedactedFromHTTPHost(t *testing.T) {
	e := newEnv(t)
	keys := e.fake("keys", keysScript(), "env = { API_TOKEN = \""+keySecret+"\" }")
	cfg := e.config(keys, allowAll)
	endpoint, stderr := e.httpServe(cfg, "--http", "127.0.0.1:0")
	tee := &teeTransport{}
	client := mcp.NewClient(&mcp.Implementation{Name: "http-host", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &http.Client{Transport: tee}, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connect over HTTP: %v", err)
	}
	defer s.Close()
	for _, tool := range []string{"keys__env", "keys__structured", "keys__b64", "keys__split", "keys__hexed", "keys__fails"} {
		res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}})
		text := ""
		if err != nil {
			text = err.Error()
		} else {
			text = resultText(res)
			if b, _ := res.StructuredContent.(map[string]any); b != nil {
				text += b["token"].(string)
			}
		}
		if !strings.Contains(text, "[redacted: keys API_TOKEN]") {
			t.Fatalf("%s over HTTP: %q", tool, text)
		}
	}
	noValue(t, "what the HTTP host received", tee.bytes())
	noValue(t, "serve's log", []byte(stderr.String()))
}
