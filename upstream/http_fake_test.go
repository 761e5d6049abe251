package upstream

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-guard/mcp-guard/config"
	"github.com/mcp-guard/mcp-guard/testdata/fakeupstream"
)

// fakeHTTP serves the scriptable fake upstream's streamable HTTP mode in
// this process until the test ends, and returns its endpoint and the file
// it records each request it got in.
func fakeHTTP(t *testing.T, script string) (endpoint, record string) {
	t.Helper()
	dir := t.TempDir()
	sp, rec := filepath.Join(dir, "script.json"), filepath.Join(dir, "record")
	if err := os.WriteFile(sp, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan int, 1)
	go func() {
		served <- fakeupstream.ServeHTTP(ctx, []string{"--script", sp, "--record", rec}, ln, io.Discard)
	}()
	t.Cleanup(func() { cancel(); <-served })
	return "http://" + ln.Addr().String() + "/mcp", rec
}

// fakeRequest is one HTTP request the fake recorded.
type fakeRequest struct {
	Method  string              `json:"method"`
	Path    string              `json:"path"`
	Query   string              `json:"query"`
	Headers map[string][]string `json:"headers"`
	Body    string              `json:"body"`
}

func fakeRequests(t *testing.T, record string) []fakeRequest {
	t.Helper()
	f, err := os.Open(record)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []fakeRequest
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r fakeRequest
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("record line %q: %v", sc.Text(), err)
		}
		out = append(out, r)
	}
	return out
}

// bearer is a Spec.Header giving token as the bearer credential.
func bearer(token string) func() (http.Header, error) {
	return func() (http.Header, error) { return http.Header{"Authorization": {"Bearer " + token}}, nil }
}

func startFakeHTTP(t *testing.T, spec Spec) (*Client, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	u, err := Start(ctx, spec, Options{Limits: config.DefaultLimits(), Version: "test"})
	if err == nil {
		t.Cleanup(u.Close)
	}
	return u, err
}

// Over streamable HTTP the credential goes only as the bearer token, on
// every request; the session id and protocol version the server's
// initialize answer gave go on every request after it; progress comes on
// the call's stream; a stream that ends before its answer fails that call
// at once, saying so, and the next call works.
func TestHTTP_BearerSessionAndAStreamCutShort(t *testing.T) {
	endpoint, record := fakeHTTP(t, `{"tools":[{"name":"read","inputSchema":{"type":"object"}},{"name":"slow","inputSchema":{"type":"object"}},{"name":"cut","inputSchema":{"type":"object"}}],
"calls":{"slow":{"do":"progress","count":2,"intervalMs":20},"cut":{"do":"progress","count":3,"intervalMs":20}},
"http":{"requireBearer":"tok-9f8e7d","endStreamFor":["cut"],"responseMode":"auto"}}`)
	u, err := startFakeHTTP(t, Spec{Name: "notes", URL: endpoint, Header: bearer("tok-9f8e7d")})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if res, err := u.CallTool(ctx, "read", []byte(`{"id":1}`), nil, nil); err != nil || strings.Contains(string(res), `"isError":true`) {
		t.Fatalf("read: %s %v", res, err)
	}
	var progress atomic.Int32
	if _, err := u.CallTool(ctx, "slow", []byte(`{}`), func(json.RawMessage) { progress.Add(1) }, nil); err != nil {
		t.Fatalf("slow: %v", err)
	}
	if progress.Load() == 0 {
		t.Fatal("no progress came on the call's stream")
	}
	start := time.Now()
	_, err = u.CallTool(ctx, "cut", []byte(`{}`), nil, nil)
	var safe *HostSafeError
	if err == nil || !strings.Contains(err.Error(), "stream ended before the answer") || !errors.As(err, &safe) || time.Since(start) > 10*time.Second {
		t.Fatalf("a call whose stream ends early: %v after %s; want it to fail at once, in words the host may see", err, time.Since(start))
	}
	if _, err := u.CallTool(ctx, "read", []byte(`{}`), nil, nil); err != nil {
		t.Fatalf("the call after the cut one: %v", err)
	}

	reqs := fakeRequests(t, record)
	session := ""
	for i, r := range reqs {
		if got := r.Headers["Authorization"]; len(got) != 1 || got[0] != "Bearer tok-9f8e7d" {
			t.Fatalf("request %d (%s %s) carried Authorization %q", i, r.Method, r.Path, got)
		}
		if strings.Contains(r.Body+r.Query, "tok-9f8e7d") {
			t.Fatalf("request %d carried the token outside its Authorization header: %+v", i, r)
		}
		if i == 0 {
			if !strings.Contains(r.Body, `"method":"initialize"`) || r.Headers["Mcp-Session-Id"] != nil {
				t.Fatalf("first request: %s with session %v; want initialize without one", r.Body, r.Headers["Mcp-Session-Id"])
			}
			continue
		}
		if s := r.Headers["Mcp-Session-Id"]; len(s) != 1 || session != "" && s[0] != session {
			t.Fatalf("request %d carried session %v", i, s)
		} else {
			session = s[0]
		}
		if v := r.Headers["Mcp-Protocol-Version"]; len(v) != 1 || v[0] != "2025-11-25" {
			t.Fatalf("request %d carried MCP-Protocol-Version %v", i, v)
		}
	}
	if len(reqs) < 5 {
		t.Fatalf("the fake recorded %d requests; the test proves nothing", len(reqs))
	}
}

// A redirect is never followed: the credential goes to the configured
// address and nowhere else, and the error says why and shows no token.
func TestHTTP_RedirectNotFollowed(t *testing.T) {
	target, targetRecord := fakeHTTP(t, `{"tools":[{"name":"read","inputSchema":{"type":"object"}}]}`)
	endpoint, record := fakeHTTP(t, `{"tools":[{"name":"read","inputSchema":{"type":"object"}}],"http":{"redirect":"`+target+`"}}`)
	_, err := startFakeHTTP(t, Spec{Name: "notes", URL: endpoint, Header: bearer("tok-must-not-travel")})
	if err == nil || !strings.Contains(err.Error(), "a redirect to "+target+"; mcp-guard never follows redirects") {
		t.Fatalf("start against a redirecting server: %v", err)
	}
	if strings.Contains(err.Error(), "tok-must-not-travel") {
		t.Fatalf("the error shows the token: %v", err)
	}
	if len(fakeRequests(t, record)) == 0 {
		t.Fatal("the configured server got nothing; the test proves nothing")
	}
	if got := fakeRequests(t, targetRecord); len(got) != 0 {
		t.Fatalf("the redirect target received %d requests, the first with headers %v", len(got), got[0].Headers)
	}
}

// TLS certificates are always verified: a server whose certificate no
// trusted authority signed is refused before anything (the credential
// included) is sent to it.
func TestHTTP_TLSVerified(t *testing.T) {
	var reached atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { reached.Add(1) }))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshake
	srv.StartTLS()
	t.Cleanup(srv.Close)
	_, err := startFakeHTTP(t, Spec{Name: "tls", URL: srv.URL + "/mcp", Header: bearer("tok-tls-secret-1")})
	if err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("start against an untrusted certificate: %v", err)
	}
	if strings.Contains(err.Error(), "tok-tls-secret-1") {
		t.Fatalf("the error shows the token: %v", err)
	}
	if n := reached.Load(); n != 0 {
		t.Fatalf("the server was reached %d times", n)
	}
}

// An HTTP error status fails the call with the server's status and words.
func TestHTTP_ErrorStatusFailsTheCall(t *testing.T) {
	endpoint, _ := fakeHTTP(t, `{"tools":[{"name":"read","inputSchema":{"type":"object"}}],"http":{"statusFor":{"tools/call":500}}}`)
	u, err := startFakeHTTP(t, Spec{Name: "notes", URL: endpoint})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err = u.CallTool(ctx, "read", []byte(`{}`), nil, nil)
	var status *StatusError
	if err == nil || !strings.Contains(err.Error(), `upstream "notes" answered HTTP 500`) || !errors.As(err, &status) {
		t.Fatalf("a call the server answers 500: %v", err)
	}
}

// A server that ends every event stream at once, asking to be reconnected
// after 1ms, is opened again by the backoff, not at its pace: its
// standalone stream about seven times in 6s (50ms, 100ms … 3.2s), and the
// answer stream of a call it never answers a few times in the call's 6s;
// not thousands.
func TestHTTP_EndedEventStreamsAreReopenedByTheBackoff(t *testing.T) {
	t.Parallel()
	endpoint, record := fakeHTTP(t, `{"tools":[{"name":"cut","inputSchema":{"type":"object"}}],
"calls":{"cut":{"do":"progress","count":3,"intervalMs":50}},
"http":{"primeEvent":true,"endStreamFor":["cut"],"endGetStreams":1}}`)
	limits := config.DefaultLimits()
	limits.CallTimeout = 6 * time.Second
	ctx := context.Background()
	u, err := Start(ctx, Spec{Name: "ends", URL: endpoint}, Options{Limits: limits, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(u.Close)
	gets := func() int {
		n := 0
		for _, r := range fakeRequests(t, record) {
			if r.Method == http.MethodGet {
				n++
			}
		}
		return n
	}
	time.Sleep(6 * time.Second)
	listening := gets()
	if listening < 4 || listening > 9 {
		t.Fatalf("the standalone stream was opened %d times in 6s, want 4 to 9", listening)
	}
	cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	if res, err := u.CallTool(cctx, "cut", []byte(`{}`), nil, nil); err == nil {
		t.Fatalf("a call whose answer never comes succeeded: %s", res)
	}
	// The answer stream resumed after 1s (the server set no retry time),
	// then 2s, 4s, whatever retry the resumed streams ask for; the
	// standalone stream reopened once at most (every 6.4s by now).
	if resumed := gets() - listening; resumed < 2 || resumed > 5 {
		t.Fatalf("%d GETs during the unanswered call's 6s, want 2 to 5", resumed)
	}
}
