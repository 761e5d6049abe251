package proxy

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcp-guard/mcp-guard/classify"
	"github.com/mcp-guard/mcp-guard/config"
	"github.com/mcp-guard/mcp-guard/gate"
	"github.com/mcp-guard/mcp-guard/ledger"
	up "github.com/mcp-guard/mcp-guard/upstream"
)

// memProxy is a Proxy over the fake upstreams scripts name (each a child
// process recording what reached it under dir), deciding by rules, its
// ledger a real SQLite file: the whole walk of a request, host line to
// upstream and back, runs in the test's process but the upstreams'.
type memProxy struct {
	*Proxy
	opts Options // what it was started with (restart)
	dir  string
	led  *ledger.Ledger
	log  *lockedBuf // what the proxy logged
}

// lockedBuf is a buffer written and read from several goroutines.
type lockedBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func newMemProxy(t *testing.T, rules []classify.Rule, scripts ...[2]string) *memProxy {
	t.Helper()
	compiled, err := classify.Compile(rules)
	if err != nil {
		t.Fatal(err)
	}
	return newMemProxyRules(t, compiled, scripts...)
}

// tomlRules are the [[rule]]s of a config (TOML) naming servers, read as
// serve reads them.
func tomlRules(t *testing.T, rules string, servers ...string) *classify.Rules {
	t.Helper()
	return tomlConfig(t, rules, servers...).CompiledRules()
}

// tomlConfig is the config of rules (TOML: rules and any other table but
// servers), servers each named by a [[server]] block, as serve loads it.
func tomlConfig(t *testing.T, rules string, servers ...string) *config.Config {
	t.Helper()
	dir := t.TempDir()
	var cfg strings.Builder
	for _, s := range servers {
		fmt.Fprintf(&cfg, "[[server]]\nname = %q\ncommand = [\"true\"]\n\n", s)
	}
	cfg.WriteString(rules)
	path := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(path, []byte(cfg.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	env := func(k string) (string, bool) { return dir, k == "HOME" }
	c, err := config.Load(path, env)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func newMemProxyRules(t *testing.T, compiled *classify.Rules, scripts ...[2]string) *memProxy {
	t.Helper()
	return newMemProxyWith(t, compiled, nil, scripts...)
}

// newMemProxyWith is newMemProxyRules with its options changed by edit
// (limits, say) before the proxy starts.
func newMemProxyWith(t *testing.T, compiled *classify.Rules, edit func(*Options), scripts ...[2]string) *memProxy {
	t.Helper()
	return newMemProxyGate(t, gate.New(compiled), edit, scripts...)
}

// newMemProxyGate is newMemProxyWith deciding by g (what each server may
// ask of the host, say).
func newMemProxyGate(t *testing.T, g *gate.Gate, edit func(*Options), scripts ...[2]string) *memProxy {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	dir := t.TempDir()
	led, lease, _ := testLedgerAndRules(t, dir, "unused")
	var specs []up.Spec
	for _, s := range scripts {
		spec := fakeupSpec(t, s[0], s[1], filepath.Join(dir, s[0]+".record"))
		spec.Capabilities = g.ClientAccess(s[0]).Capabilities() // as serve offers them
		specs = append(specs, spec)
	}
	logs := &lockedBuf{}
	opts := Options{Upstreams: specs, Gate: g, Ledger: led, Lease: lease, PinTOFU: true,
		Limits: roomyLimits(1000, 100), LogDir: filepath.Join(dir, "logs"), Version: "test",
		Log: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	if edit != nil {
		edit(&opts)
	}
	p, err := New(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return &memProxy{Proxy: p, opts: opts, dir: dir, led: led, log: logs}
}

// restart stops the proxy and starts it again, as a new serve would, on
// the same ledger and options. Its hosts must have ended: Close waits
// for what serves them.
func (m *memProxy) restart(t *testing.T) {
	t.Helper()
	m.Close()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	p, err := New(ctx, m.opts)
	if err != nil {
		t.Fatalf("restart: %v", err)
	}
	t.Cleanup(p.Close)
	m.Proxy = p
}

// received is every request of method that reached upstream name.
func (m *memProxy) received(t *testing.T, name, method string) []string {
	t.Helper()
	var out []string
	for _, line := range readLines(t, filepath.Join(m.dir, name+".record")) {
		if strings.Contains(line, `"method":"`+method+`"`) {
			out = append(out, line)
		}
	}
	return out
}

// call is the ledger's newest row of a call to tool (an upstream tool's
// own name), or a zero row.
func (m *memProxy) call(t *testing.T, tool string) ledger.CallRow {
	t.Helper()
	for _, r := range m.calls(t) {
		if r.Tool == tool {
			return r
		}
	}
	return ledger.CallRow{}
}

// calls are the ledger's call rows, newest first.
func (m *memProxy) calls(t *testing.T) []ledger.CallRow {
	t.Helper()
	rows, err := m.led.Calls(context.Background(), ledger.CallFilter{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// memHost is a host on p.ServeStdio over in-memory pipes, initialized.
type memHost struct {
	t   *testing.T
	in  *io.PipeWriter
	wmu sync.Mutex

	init     memReply      // the answer to its initialize
	done     func()        // waits for the session to end and its output to be read
	served   chan struct{} // closed when ServeStdio has returned
	serveErr error         // what it returned, once served is closed

	mu    sync.Mutex
	got   map[string]memReply // by the id's JSON
	notes []string            // the notifications the host was sent, in order
	lines []string            // every line the host was sent, in order
}

// memReply is an answer as the host read it.
type memReply struct {
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func startMemHost(t *testing.T, p *Proxy) *memHost {
	t.Helper()
	return startMemHostCaps(t, p, `{}`)
}

// startMemHostCaps is startMemHost with the host declaring caps (its
// initialize's capabilities).
func startMemHostCaps(t *testing.T, p *Proxy, caps string) *memHost {
	t.Helper()
	h := startMemHostBare(t, p)
	h.init = h.request("init", "initialize", `{"protocolVersion":"2025-11-25","capabilities":`+caps+`,"clientInfo":{"name":"t","version":"1"}}`)
	h.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return h
}

// startMemHostBare is a stdio host connected to p that has sent nothing:
// not initialized.
func startMemHostBare(t *testing.T, p *Proxy) *memHost {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	h := &memHost{t: t, in: inW, got: map[string]memReply{}}
	h.served = make(chan struct{})
	go func() { h.serveErr = p.ServeStdio(ctx, inR, outW); outW.Close(); close(h.served) }()
	readDone := make(chan struct{})
	h.done = func() { <-h.served; <-readDone }
	go func() {
		defer close(readDone)
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			var r memReply
			h.mu.Lock()
			h.lines = append(h.lines, sc.Text())
			h.mu.Unlock()
			if json.Unmarshal(sc.Bytes(), &m) != nil {
				continue
			}
			if m.Method != "" && m.ID == nil {
				h.mu.Lock()
				h.notes = append(h.notes, sc.Text())
				h.mu.Unlock()
				continue
			}
			if m.Method != "" || m.ID == nil || json.Unmarshal(sc.Bytes(), &r) != nil {
				continue
			}
			h.mu.Lock()
			h.got[string(m.ID)] = r
			h.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		inW.Close()
		cancel()
		h.done()
	})
	return h
}

// end closes the host's input and waits for the session to end: what
// serve owed the host has been read then.
func (h *memHost) end() {
	h.in.Close()
	h.done()
}

func (h *memHost) send(line string) {
	h.t.Helper()
	h.wmu.Lock()
	defer h.wmu.Unlock()
	if _, err := io.WriteString(h.in, line+"\n"); err != nil {
		h.t.Fatal(err)
	}
}

// request sends method with params under the string id and returns the
// answer (within 20 s).
func (h *memHost) request(id, method, params string) memReply {
	h.t.Helper()
	h.send(`{"jsonrpc":"2.0","id":"` + id + `","method":"` + method + `","params":` + params + `}`)
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		h.mu.Lock()
		r, ok := h.got[`"`+id+`"`]
		h.mu.Unlock()
		if ok {
			return r
		}
		time.Sleep(2 * time.Millisecond)
	}
	h.t.Fatalf("no answer to %s %s", method, id)
	return memReply{}
}

// before is every line the host was sent before the answer to the
// request with the string id, in order; the answer has come.
func (h *memHost) before(id string) []string {
	h.t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	for i, l := range h.lines {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal([]byte(l), &m) == nil && m.Method == "" && string(m.ID) == `"`+id+`"` {
			return slices.Clone(h.lines[:i])
		}
	}
	h.t.Fatalf("no answer to %s among the host's lines", id)
	return nil
}

// answerLine is the line answering the request with the string id, as
// the host read it (within 20 s).
func (h *memHost) answerLine(id string) string {
	h.t.Helper()
	return h.answerTo(`"` + id + `"`)
}

// answerTo is answerLine for the request whose id is the JSON id.
func (h *memHost) answerTo(id string) string {
	h.t.Helper()
	return h.first("an answer to "+id, func(m rpcMsg) bool { return m.Method == "" && string(m.ID) == id }).line
}

// waitMethod is the first line the host was sent of a request or
// notification of method (within 20 s).
func (h *memHost) waitMethod(method string) rpcMsg {
	h.t.Helper()
	return h.first(method, func(m rpcMsg) bool { return m.Method == method })
}

// first is the first message the host was sent that is, within 20 s.
func (h *memHost) first(what string, is func(rpcMsg) bool) rpcMsg {
	h.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		h.mu.Lock()
		for _, l := range h.lines {
			var m rpcMsg
			if json.Unmarshal([]byte(l), &m) == nil && is(m) {
				h.mu.Unlock()
				m.line = l
				return m
			}
		}
		h.mu.Unlock()
		time.Sleep(2 * time.Millisecond)
	}
	h.t.Fatalf("no %s reached the host", what)
	return rpcMsg{}
}

// notifications are the notifications of method the host was sent so far.
func (h *memHost) notifications(method string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, n := range h.notes {
		if strings.Contains(n, `"method":"`+method+`"`) {
			out = append(out, n)
		}
	}
	return out
}

// toolNames is what tools/list shows the host.
func (h *memHost) toolNames(id string) []string {
	h.t.Helper()
	r := h.request(id, "tools/list", `{}`)
	var l struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if r.Error != nil || json.Unmarshal(r.Result, &l) != nil {
		h.t.Fatalf("tools/list: %+v %s", r.Error, r.Result)
	}
	var names []string
	for _, t := range l.Tools {
		names = append(names, t.Name)
	}
	return names
}

// readLines is the file's lines (none when it does not exist yet).
func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// eventually waits up to 10 s for cond, failing the test with what.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// walk runs a test of the whole walk in a synctest bubble, beside the
// package's other walks: its clock is the bubble's, so waits cost no real
// time, and every goroutine it started (the proxy's, the fake upstreams',
// the host's) must have ended by its end.
func walk(t *testing.T, f func(t *testing.T)) {
	t.Parallel()
	synctest.Test(t, f)
}

// mustRules compiles rules.
func mustRules(t *testing.T, rules []classify.Rule) *classify.Rules {
	t.Helper()
	compiled, err := classify.Compile(rules)
	if err != nil {
		t.Fatal(err)
	}
	return compiled
}

// idOf is the id of a JSON-RPC message, as its bytes.
func idOf(t *testing.T, line string) string {
	t.Helper()
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	if err := json.Unmarshal([]byte(line), &m); err != nil || m.ID == nil {
		t.Fatalf("no id in %s", line)
	}
	return string(m.ID)
}
