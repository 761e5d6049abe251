package proxy

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-guard/mcp-guard/secrets"
	"github.com/mcp-guard/mcp-guard/testdata/fakeupstream"
)

// keySecret is the credential of the secrets tests' server "keys".
const keySecret = fakeupstream.KeySecret

// teeTransport keeps every byte of every response its client reads.
type teeTransport struct {
	next http.RoundTripper
	mu   sync.Mutex
	got  bytes.Buffer
}

func (t *teeTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(r)
	if err == nil {
		resp.Body = struct {
			io.Reader
			io.Closer
		}{io.TeeReader(resp.Body, t), resp.Body}
	}
	return resp, err
}

func (t *teeTransport) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.got.Write(b)
}

func (t *teeTransport) bytes() []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	return bytes.Clone(t.got.Bytes())
}

// T1 over the HTTP host: every byte the host's HTTP client receives (JSON
// bodies and event streams) is free of the credential in any encoding the
// server used; each answer carries the redaction instead, and what holds
// no credential passes as it was.
func TestWalk_SecretsRedactedFromHTTPHost(t *testing.T) {
	walk(t, func(t *testing.T) {
		known, _ := secrets.NewKnown([]secrets.Secret{{Server: "keys", Name: "API_TOKEN", Value: keySecret}})
		p := newMemProxyWith(t, mustRules(t, allowAll), func(o *Options) {
			o.Secrets = secrets.NewRedactor(known, secrets.Options{Found: true, RedactFound: true})
		}, [2]string{"keys", fakeupstream.KeysScript()})
		h := startHTTPHost(t, p.Proxy)
		tee := &teeTransport{next: h.client.Transport}
		h.client = &http.Client{Transport: tee}
		s := h.sdk(t, "2025-11-25", nil)
		// (tool env answers this process's environment here, not the
		// server's; the binary's tests run that one.)
		for _, tool := range []string{"keys__structured", "keys__b64", "keys__split", "keys__hexed", "keys__fails"} {
			res, err := s.CallTool(context.Background(), &sdk.CallToolParams{Name: tool, Arguments: map[string]any{}})
			text := ""
			if err != nil {
				text = err.Error()
			} else {
				text = textOf(res)
				if b, _ := res.StructuredContent.(map[string]any); b != nil {
					text += fmt.Sprint(b["token"])
				}
			}
			if !strings.Contains(text, "[redacted: keys API_TOKEN]") {
				t.Fatalf("%s over HTTP: %q", tool, text)
			}
			if tool == "keys__structured" && textOf(res) != "ok" {
				t.Fatalf("the text beside the credential did not pass as it was: %q", textOf(res))
			}
		}
		got := tee.bytes()
		for _, v := range []string{keySecret, base64.StdEncoding.EncodeToString([]byte(keySecret)), fmt.Sprintf("%x", keySecret), keySecret[8:]} {
			if bytes.Contains(got, []byte(v)) {
				t.Fatalf("what the HTTP host received holds the credential (%q):\n%s", v, got)
			}
		}
		for _, v := range []string{keySecret, base64.StdEncoding.EncodeToString([]byte(keySecret))} {
			if strings.Contains(p.log.String(), v) {
				t.Fatalf("serve's log holds the credential (%q)", v)
			}
		}
		if !bytes.Contains(got, []byte("[redacted: keys API_TOKEN]")) {
			t.Fatal("the test saw no redaction; it proves nothing")
		}
	})
}
