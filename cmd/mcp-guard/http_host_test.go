package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// httpServe starts `mcp-guard serve --http ...` (in this process unless
// the env asks for the binary) and returns the endpoint URL it announces. It
// is stopped, as by SIGINT, with the test.
func (e *env) httpServe(cfg string, flags ...string) (endpoint string, stderr *lockedBuffer) {
	e.t.Helper()
	stderr = &lockedBuffer{}
	pr, pw := io.Pipe()
	if e.inProcess() {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			run(append([]string{"serve", "--config", cfg}, flags...), cli{ctx: ctx, exe: bins.guard, stdin: strings.NewReader(""), stdout: io.Discard, stderr: pw, env: envFunc(e.httpEnv())})
		}()
		e.servePID = os.Getpid()
		e.t.Cleanup(func() {
			cancel()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				e.t.Errorf("mcp-guard serve --http (in process) did not end within 10s of its context's end")
			}
			pw.Close()
			if e.t.Failed() {
				e.t.Logf("mcp-guard serve --http stderr:\n%s", stderr)
			}
		})
	} else {
		cmd := exec.Command(bins.guard, append([]string{"serve", "--config", cfg}, flags...)...)
		cmd.Env = append(e.httpEnv(), coverEnv()...)
		cmd.Stderr = pw
		if err := cmd.Start(); err != nil {
			e.t.Fatal(err)
		}
		e.servePID = cmd.Process.Pid
		e.t.Cleanup(func() {
			cmd.Process.Signal(os.Interrupt)
			done := make(chan struct{})
			go func() { cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				cmd.Process.Kill()
				<-done
			}
			pw.Close()
			if e.t.Failed() {
				e.t.Logf("mcp-guard serve --http stderr:\n%s", stderr)
			}
		})
	}
	found := make(chan string, 1)
	go func() {
		re := regexp.MustCompile(`serving MCP over streamable HTTP at (\S+)`)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			stderr.Write([]byte(sc.Text() + "\n"))
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
	}()
	select {
	case endpoint = <-found:
	case <-time.After(30 * time.Second):
		e.t.Fatalf("serve --http announced no address; stderr:\n%s", stderr)
	}
	return endpoint, stderr
}

// httpEnv is serve --http's environment: PATH, HOME and the env's extras.
func (e *env) httpEnv() []string {
	return append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + e.dir}, e.extra...)
}

// httpHost connects the go-sdk client over streamable HTTP; token, when
// set, is sent as a bearer token.
func httpHost(t *testing.T, endpoint, token string) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "http-host", Version: "1"}, nil)
	hc := &http.Client{Transport: bearer{token, http.DefaultTransport}}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	s, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connect over HTTP: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	if b.token != "" {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return b.next.RoundTrip(r)
}

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`

// Binding where other machines can reach it needs a token; without --http
// the loopback default holds.
func TestHTTPHost_NonLoopbackNeedsToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := e.config(e.fake("notes", `{"tools":[{"name":"read","inputSchema":{"type":"object"}}]}`), allowAll)
	out, code := e.mcpGuard("serve", "--config", cfg, "--http", "0.0.0.0:0")
	if code != 2 || !strings.Contains(out, "can be reached from other machines; give --token-file") {
		t.Fatalf("serve --http 0.0.0.0:0 without a token (exit %d):\n%s", code, out)
	}
	tokenFile := filepath.Join(e.dir, "t")
	writeFile(t, tokenFile, "0123456789abcdef0123")
	os.Chmod(tokenFile, 0o644)
	out, code = e.mcpGuard("serve", "--config", cfg, "--http", "127.0.0.1:0", "--token-file", tokenFile)
	if code != 2 || !strings.Contains(out, "can be read by other users") {
		t.Fatalf("serve with a readable token file (exit %d):\n%s", code, out)
	}
	os.Chmod(tokenFile, 0o600)
	if out, code := e.mcpGuard("serve", "--config", cfg, "--http", "127.0.0.1:0", "--idle-ttl", "-1s"); code != 2 || !strings.Contains(out, "--idle-ttl -1s: want a positive duration") {
		t.Fatalf("serve with a negative --idle-ttl (exit %d):\n%s", code, out)
	}
	_, stderr := e.httpServe(cfg, "--http", "0.0.0.0:0", "--token-file", tokenFile)
	if !strings.Contains(stderr.String(), "WARNING: mcp-guard serves MCP on") {
		t.Fatalf("no loud warning for a reachable endpoint:\n%s", stderr)
	}
	endpoint, _ := e.httpServe(cfg, "--http", ":0")
	if !strings.HasPrefix(endpoint, "http://127.0.0.1:") {
		t.Fatalf("--http :0 bound %s; want loopback", endpoint)
	}
	s := httpHost(t, endpoint, "")
	res, err := s.ListTools(context.Background(), nil)
	if err != nil || !slices.ContainsFunc(res.Tools, func(tl *mcp.Tool) bool { return tl.Name == "notes__read" }) {
		t.Fatalf("tools over HTTP: %v %v", err, res)
	}
}

// A host session idle past --idle-ttl is ended: its ledger session is
// closed and its session ID is no longer accepted. The host's own token
// never travels to an HTTP upstream, and a host cancel reaches the upstream
// as notifications/cancelled over HTTP.
func TestHTTPHost_IdleSessionsEndAndHostCredentialsStay(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	base, _ := e.fakeHTTP("remote", `{"tools":[{"name":"read","inputSchema":{"type":"object"}},{"name":"slow","inputSchema":{"type":"object"}}],"calls":{"slow":{"do":"sleep","ms":30000}}}`, 0)
	tokenFile := filepath.Join(e.dir, "host.token")
	writeFile(t, tokenFile, "host-token-0123456789abcdef\n")
	os.Chmod(tokenFile, 0o600)
	cfg := e.config(fmt.Sprintf("[[server]]\nname = \"remote\"\nurl = %q\n", base+"/mcp"), allowAll)
	endpoint, _ := e.httpServe(cfg, "--http", "127.0.0.1:0", "--token-file", tokenFile, "--idle-ttl", "2s")
	s := httpHost(t, endpoint, "host-token-0123456789abcdef")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	if res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "remote__read", Arguments: map[string]any{}}); err != nil || res.IsError {
		t.Fatalf("call: %v %v", err, res)
	}
	cancel()

	led := e.openLedger()
	hostSession := regexp.MustCompile(`"host":"http 127\.0\.0\.1:[1-9]`) // not the process's own ":0"
	open := func() int {
		evs, err := led.Events(context.Background(), 0, 1000)
		if err != nil {
			t.Fatal(err)
		}
		live := map[string]bool{}
		for _, ev := range evs {
			switch {
			case ev.Kind == "session.started" && hostSession.Match(ev.Body):
				live[ev.Subject] = true
			case ev.Kind == "session.ended":
				delete(live, ev.Subject)
			}
		}
		return len(live)
	}
	if n := open(); n != 1 {
		evs, _ := led.Events(context.Background(), 0, 1000)
		for _, ev := range evs {
			t.Logf("event %d %s %s %s", ev.Seq, ev.Kind, ev.Subject, ev.Body)
		}
		t.Fatalf("%d open host sessions in the ledger, want 1", n)
	}
	eventually(t, "the idle host session to end", func() bool { return open() == 0 })

	// Cancel a slow call from another host: the upstream hears of it, over
	// HTTP. (The go-sdk client ends its session when a call is cancelled.)
	other := httpHost(t, endpoint, "host-token-0123456789abcdef")
	ctx, cancel = context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := other.CallTool(ctx, &mcp.CallToolParams{Name: "remote__slow", Arguments: map[string]any{}})
		done <- err
	}()
	eventually(t, "the slow call to reach the upstream", func() bool {
		return slices.ContainsFunc(e.httpRequests("remote"), func(r httpRecord) bool { return strings.Contains(r.Body, `"name":"slow"`) })
	})
	cancel()
	<-done
	eventually(t, "notifications/cancelled at the upstream", func() bool {
		return slices.ContainsFunc(e.httpRequests("remote"), func(r httpRecord) bool { return strings.Contains(r.Body, "notifications/cancelled") })
	})
	for _, r := range e.httpRequests("remote") {
		for k, vs := range r.Headers {
			for _, v := range vs {
				if strings.Contains(v, "host-token") {
					t.Fatalf("the host's token reached the upstream in %s: %s", k, v)
				}
			}
		}
	}
}

// serve --http refuses what it cannot serve — an address that is not
// HOST:PORT, a port out of range, one already taken, one other machines can
// reach without a token, an unsafe token file, an HTTP flag without --http —
// with exit 2 and a way out, before any upstream starts: the fake upstream
// was never sent initialize, and the ledger holds no upstream.started. A
// good address serves; the same checks pass it.
func TestHTTPHost_BadAddressRefusedBeforeUpstreams(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := e.config(e.fake("notes", `{"tools":[{"name":"read","inputSchema":{"type":"object"}}]}`), allowAll)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	tokenFile := filepath.Join(e.dir, "t")
	writeFile(t, tokenFile, "0123456789abcdef0123")
	os.Chmod(tokenFile, 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--http", "8080"}, `--http "8080": want HOST:PORT or :PORT, e.g. --http 127.0.0.1:8080`},
		{[]string{"--http", "127.0.0.1:70000"}, `the port "70000" is not a number from 0 to 65535`},
		{[]string{"--http", taken.Addr().String()}, "cannot listen there"},
		{[]string{"--http", "0.0.0.0:0"}, "can be reached from other machines; give --token-file"},
		{[]string{"--http", "127.0.0.1:0", "--token-file", tokenFile}, "can be read by other users (mode 0644); chmod 600 it"},
		{[]string{"--http", "0.0.0.0:0", "--token-file", tokenFile + ".missing"}, "t.missing does not exist: put a token of at least 16 characters there"},
		{[]string{"--token-file", tokenFile}, "--token-file is for the HTTP endpoint: give --http ADDR too"},
	} {
		out, code := e.mcpGuard(append([]string{"serve", "--config", cfg}, c.args...)...)
		if code != 2 || !strings.Contains(out, c.want) {
			t.Errorf("serve %v: exit %d, want 2 and %q:\n%s", c.args, code, c.want, out)
		}
		if strings.Contains(out, "serving MCP") {
			t.Errorf("serve %v announced an endpoint:\n%s", c.args, out)
		}
	}
	if rec := e.record("notes"); len(rec) != 0 {
		t.Fatalf("an upstream was started for a refused --http: it received %v", rec)
	}
	if starts := upstreamStartsIfAny(t, e, "notes"); len(starts) != 0 {
		t.Fatalf("ledger records upstream starts for a refused --http: %v", starts)
	}

	// The allow path: a free loopback port serves, and starts the upstream.
	endpoint, _ := e.httpServe(cfg, "--http", "127.0.0.1:0")
	s := httpHost(t, endpoint, "")
	if res, err := s.ListTools(context.Background(), nil); err != nil || len(res.Tools) != 1 {
		t.Fatalf("tools over HTTP: %v %v", err, res)
	}
	if starts := upstreamStartsIfAny(t, e, "notes"); len(starts) != 1 {
		t.Fatalf("upstream.started events %v; want one once serving", starts)
	}
}

// upstreamStartsIfAny is upstreamStarts, or none when no ledger was made.
func upstreamStartsIfAny(t *testing.T, e *env, server string) []map[string]any {
	t.Helper()
	if _, err := os.Stat(filepath.Join(e.state, "ledger.db")); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return upstreamStarts(t, e, server)
}
