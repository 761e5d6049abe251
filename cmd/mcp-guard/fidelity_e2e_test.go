package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// What passes through mcp-guard arrives as the server sent it: these tests
// compare what the host received with what the fake upstream sent, byte
// for byte, after undoing only the name or URI mcp-guard rewrites.

var fidelityListKey = map[string]string{"tools/list": "tools", "prompts/list": "prompts", "resources/list": "resources", "resources/templates/list": "resourceTemplates"}

// rawHTTP is a host speaking JSON-RPC to mcp-guard serve --http directly.
type rawHTTP struct {
	t        testing.TB
	endpoint string
	sid      string
	stderr   *lockedBuffer
}

// rawHTTPConnect starts serve --http on cfg and initializes one session.
func (e *env) rawHTTPConnect(cfg string) *rawHTTP {
	e.t.Helper()
	return e.rawHTTPInit(cfg, initBody)
}

// rawHTTPInit starts serve --http on cfg with flags and initializes one
// session with the initialize request init.
func (e *env) rawHTTPInit(cfg, init string, flags ...string) *rawHTTP {
	e.t.Helper()
	endpoint, stderr := e.httpServe(cfg, append([]string{"--http", "127.0.0.1:0"}, flags...)...)
	h := &rawHTTP{t: e.t, endpoint: endpoint, stderr: stderr}
	h.initialize(init)
	return h
}

// another initializes one more session of the same serve.
func (h *rawHTTP) another() *rawHTTP {
	h.t.Helper()
	n := &rawHTTP{t: h.t, endpoint: h.endpoint, stderr: h.stderr}
	n.initialize(initBody)
	return n
}

func (h *rawHTTP) initialize(init string) {
	h.t.Helper()
	resp := h.do(http.MethodPost, init, nil)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	h.sid = resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || h.sid == "" {
		h.t.Fatalf("initialize over HTTP: %d, session %q", resp.StatusCode, h.sid)
	}
	if code, _ := h.post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`); code != http.StatusAccepted {
		h.t.Fatalf("notifications/initialized: HTTP %d", code)
	}
}

func (h *rawHTTP) do(method, body string, header map[string]string) *http.Response {
	h.t.Helper()
	resp, err := h.send(method, body, header)
	if err != nil {
		h.t.Fatal(err)
	}
	return resp
}

// send is do for any goroutine: it returns the error.
func (h *rawHTTP) send(method, body string, header map[string]string) (*http.Response, error) {
	req, err := http.NewRequest(method, h.endpoint, strings.NewReader(body))
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
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	return http.DefaultClient.Do(req)
}

// post sends one body in the session and returns the status and every
// JSON-RPC message of the answer, whether JSON or an event stream.
func (h *rawHTTP) post(body string) (int, []rpcMsg) {
	h.t.Helper()
	resp := h.do(http.MethodPost, body, nil)
	defer resp.Body.Close()
	return resp.StatusCode, readMessages(resp)
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

// namespace = false: a server served alone keeps its own tool and prompt
// names (rules and pins are unchanged: the call is recorded as db/echo);
// with other servers, check and serve refuse it, naming the server, and
// check --server and serve --server take it.
func TestFidelity_NamespaceFalseOnlyWhenServedAlone(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	db := e.fake("db", `{"tools":[{"name":"echo","inputSchema":{"type":"object"}}],"prompts":[{"name":"greet"}]}`, `namespace = false`)
	rules := allowAll + "\n[[rule]]\nserver = \"db\"\nprompt = \"*\"\naction = \"allow\"\n"

	two := e.config(db, e.fake("aa", `{"tools":[{"name":"echo","inputSchema":{"type":"object"}}]}`), rules)
	for _, args := range [][]string{{"check", "--config", two}, {"serve", "--config", two}} {
		out, code := e.mcpGuard(args...)
		if code != 2 || !strings.Contains(out, "server[1] (db).namespace: false is honoured only when db is served alone") {
			t.Fatalf("%s of two servers, one namespace = false: exit %d\n%s", args[0], code, out)
		}
	}
	if out, code := e.mcpGuard("check", "--config", two, "--server", "db"); code != 0 {
		t.Fatalf("check --server db: exit %d\n%s", code, out)
	}

	one := filepath.Join(e.dir, "one.toml") // beside two, same ledger
	writeFile(t, one, fmt.Sprintf("startup_wait = \"60s\"\n\n[ledger]\npath = %q\n\n%s\n%s", filepath.Join(e.state, "ledger.db"), db, rules))
	for _, c := range []struct {
		what string
		args []string
	}{
		{"serve --server db", []string{"serve", "--config", two, "--server", "db"}},
		{"a one-server config", []string{"serve", "--config", one}},
	} {
		t.Run(c.what, func(t *testing.T) {
			h := e.connectArgs(c.args...)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			tools, err := h.ListTools(ctx, nil)
			if err != nil || len(tools.Tools) != 1 || tools.Tools[0].Name != "echo" {
				t.Fatalf("tools: %v %v; want echo under its own name", tools, err)
			}
			prompts, err := h.ListPrompts(ctx, nil)
			if err != nil || len(prompts.Prompts) != 1 || prompts.Prompts[0].Name != "greet" {
				t.Fatalf("prompts: %v %v; want greet under its own name", prompts, err)
			}
			if res, err := h.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{}}); err != nil || res.IsError {
				t.Fatalf("call echo: %v %v", res, err)
			}
			if res, err := h.CallTool(ctx, &mcp.CallToolParams{Name: "db__echo", Arguments: map[string]any{}}); err == nil && !res.IsError {
				t.Fatal("the prefixed name was served too")
			}
			row := e.callsByTool(e.openLedger())["echo"]
			if row.Server != "db" || row.Tool != "echo" || row.Decision != "allow" {
				t.Fatalf("ledger row %+v; want db/echo allowed", row)
			}
		})
	}
}

// connectArgs connects the go-sdk client to mcp-guard run with args.
func (e *env) connectArgs(args ...string) *mcp.ClientSession {
	e.t.Helper()
	stderr := &lockedBuffer{}
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-host", Version: "1"}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := client.Connect(ctx, e.serveTransport(stderr, args...), nil)
	if err != nil {
		e.t.Fatalf("connect to mcp-guard %v: %v\nstderr:\n%s", args, err, stderr)
	}
	e.t.Cleanup(func() {
		s.Close()
		if e.t.Failed() {
			e.t.Logf("mcp-guard stderr:\n%s", stderr)
		}
	})
	return s
}
