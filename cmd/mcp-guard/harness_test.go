package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/mcp-guard/mcp-guard/testdata/fakeupstream"
)

// bins holds the binaries TestMain builds: the real mcp-guard and the fake
// upstream. End-to-end tests run them as child processes.
var bins struct {
	dir     string
	guard   string
	fakeup  string
	relay   string
	modern  string // testdata/modernup: a go-sdk server speaking 2026-07-28
	goRS    string // testdata/goresource: a go-sdk server that takes OAuth tokens
	peers   string // testdata/peers/node_modules
	failure string

	// coverdir is where a coverage-built mcp-guard writes its counters
	// (GOCOVERDIR); empty when the tests run without coverage.
	coverdir string
}

func TestMain(m *testing.M) {
	testscript.Main(removingBins{m}, map[string]func(){
		"mcp-guard": func() { main() },
		"fakeup":    fakeupstream.Main,
		// the client command of the conformance suite's client scenarios
		"mcp-guard-conformance-client": conformanceClientMain,
	})
}

// removingBins runs the tests, then removes the binaries they built (about
// 85 MB a run, which the mutation suite's hundreds of runs would otherwise
// leave in the temporary directory).
type removingBins struct{ m *testing.M }

func (r removingBins) Run() int {
	code := r.m.Run()
	if bins.dir != "" {
		os.RemoveAll(bins.dir)
	}
	return code
}

// buildOnce builds the binaries the first time an end-to-end test needs them.
var buildOnce sync.Once

func binaries(t testing.TB) {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "mcp-guard-e2e-")
		if err != nil {
			bins.failure = err.Error()
			return
		}
		bins.dir = dir
		bins.guard = filepath.Join(dir, "mcp-guard")
		bins.fakeup = filepath.Join(dir, "fakeup")
		bins.relay = filepath.Join(dir, "relay")
		bins.modern = filepath.Join(dir, "modernup")
		bins.goRS = filepath.Join(dir, "goresource")
		guardFlags, err := coverBuild(dir)
		if err != nil {
			bins.failure = err.Error()
			return
		}
		// Two builds at once: mcp-guard, and the test programs in one go
		// build, which writes each into dir under its package's name.
		builds := [][]string{
			append(append([]string{"build"}, guardFlags...), "-o", bins.guard, "."),
			{"build", "-o", dir + string(filepath.Separator), "../../testdata/fakeup", "../../testdata/relay", "../../testdata/modernup", "../../testdata/goresource"},
		}
		failures := make([]string, len(builds))
		var wg sync.WaitGroup
		for i, args := range builds {
			wg.Go(func() {
				if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
					failures[i] = fmt.Sprintf("go %s: %v\n%s", strings.Join(args, " "), err, out)
				}
			})
		}
		wg.Wait()
		if bins.failure = strings.Join(slices.DeleteFunc(failures, func(f string) bool { return f == "" }), "\n"); bins.failure != "" {
			return
		}
		abs, _ := filepath.Abs("../../testdata/peers/node_modules")
		bins.peers = abs
	})
	if bins.failure != "" {
		t.Fatal(bins.failure)
	}
}

// coverBuild returns the go build flags for mcp-guard and sets
// bins.coverdir. When the tests run with coverage, the binary is built with
// coverage of every package of the module and writes its counters to
// $MCP_GUARD_COVERDIR (`make cover` merges them with the unit tests' data),
// else to a directory under dir.
func coverBuild(dir string) ([]string, error) {
	mode := testing.CoverMode()
	if mode == "" {
		return nil, nil
	}
	cd := os.Getenv("MCP_GUARD_COVERDIR")
	if cd == "" {
		cd = filepath.Join(dir, "cover")
	}
	cd, err := filepath.Abs(cd)
	if err != nil {
		return nil, fmt.Errorf("coverage directory: %w", err)
	}
	if err := os.MkdirAll(cd, 0o700); err != nil {
		return nil, fmt.Errorf("coverage directory: %w", err)
	}
	bins.coverdir = cd
	return []string{"-cover", "-covermode=" + mode, "-coverpkg=github.com/mcp-guard/mcp-guard/..."}, nil
}

// coverEnv is the environment that tells a coverage-built mcp-guard where to
// write its counters: every process that runs bins.guard gets it. Without it
// such a binary warns on stderr and its coverage is lost.
func coverEnv() []string {
	if bins.coverdir == "" {
		return nil
	}
	return []string{"GOCOVERDIR=" + bins.coverdir}
}

// peers returns the path of an installed npm peer package, failing the test
// when the peers are not installed: `make test` installs them.
func peerPath(t *testing.T, rel string) string {
	t.Helper()
	binaries(t)
	p := filepath.Join(bins.peers, rel)
	if _, err := os.Stat(p); err != nil {
		t.Fatalf("npm peer %s is not installed (run `make peers`): %v", rel, err)
	}
	return p
}

// env is a test's mcp-guard setup: a config file, a state dir, fake
// upstream scripts and the files they record to.
type env struct {
	t     testing.TB
	dir   string
	state string
	extra []string // extra environment for mcp-guard serve
	// wrap, when set, changes every mcp-guard command the env runs (serve
	// and mcpGuard's), e.g. to run it as another user.
	wrap func(*exec.Cmd)
	// servePID is the process the last httpServe started.
	servePID int
	// binary has connect, rawConnect and mcpGuard run the built mcp-guard
	// as a child process, for a test about the process itself (a signal, a
	// kill, its exit); otherwise they run it in this process (inproc.go).
	binary bool
}

func newEnv(t testing.TB) *env {
	t.Helper()
	binaries(t)
	dir := t.TempDir()
	return &env{t: t, dir: dir, state: filepath.Join(dir, "state")}
}

// fake returns a [[server]] block that runs the fake upstream with script,
// recording to <dir>/<name>.record.
func (e *env) fake(name, script string, extra ...string) string {
	e.t.Helper()
	sp := filepath.Join(e.dir, name+".script.json")
	if err := os.WriteFile(sp, []byte(script), 0o600); err != nil {
		e.t.Fatal(err)
	}
	return fmt.Sprintf("[[server]]\nname = %q\ncommand = [%q, \"--script\", %q, \"--record\", %q]\n%s\n",
		name, bins.fakeup, sp, e.recordPath(name), strings.Join(extra, "\n"))
}

func (e *env) recordPath(name string) string { return filepath.Join(e.dir, name+".record") }

// config writes config.toml with the given blocks and a ledger under state.
// Its startup_wait is 60s, not the default 5s: a test that is not about
// startup lists what every server offers, however slowly an npm server
// starts on a loaded machine (startupConfig sets a short one).
func (e *env) config(blocks ...string) string {
	e.t.Helper()
	p := filepath.Join(e.dir, "config.toml")
	src := fmt.Sprintf("startup_wait = \"60s\"\n\n[ledger]\npath = %q\n\n%s", filepath.Join(e.state, "ledger.db"), strings.Join(blocks, "\n"))
	if err := os.WriteFile(p, []byte(src), 0o600); err != nil {
		e.t.Fatal(err)
	}
	return p
}

// record returns the lines the fake upstream name received.
func (e *env) record(name string) []string {
	e.t.Helper()
	b, err := os.ReadFile(e.recordPath(name))
	if err != nil && !os.IsNotExist(err) {
		e.t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(string(b), "\n") {
		if l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

// calls returns the tools/call requests the fake upstream name received.
func (e *env) calls(name string) []rpcMsg {
	var out []rpcMsg
	for _, l := range e.record(name) {
		var m rpcMsg
		if json.Unmarshal([]byte(l), &m) == nil && m.Method == "tools/call" {
			m.line = l
			out = append(out, m)
		}
	}
	return out
}

type rpcMsg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	line string
}

// serveEnv is serve's controlled environment: PATH, HOME, a secret that
// must never reach a child, and the env's extras.
func (e *env) serveEnv() []string {
	return append([]string{
		"PATH=" + os.Getenv("PATH"),
		"HOME=" + e.dir,
		"MCP_GUARD_TEST_SECRET=hunter2",
	}, e.extra...)
}

// serveCmd is the mcp-guard serve command for this env, in serveEnv.
func (e *env) serveCmd(cfg string) *exec.Cmd {
	return e.guardCmd("serve", "--config", cfg)
}

// guardCmd is the mcp-guard command with args, in serveEnv.
func (e *env) guardCmd(args ...string) *exec.Cmd {
	cmd := exec.Command(bins.guard, args...)
	cmd.Env = append(e.serveEnv(), coverEnv()...)
	if e.wrap != nil {
		e.wrap(cmd)
	}
	return cmd
}

// host connects the official go-sdk client to a real mcp-guard serve process.
type host struct {
	*mcp.ClientSession
	stderr *lockedBuffer
	cmd    *exec.Cmd

	mu       sync.Mutex
	progress []*mcp.ProgressNotificationParams
	updates  []string // URIs of notifications/resources/updated received
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (e *env) connect(cfg string, version string) *host {
	e.t.Helper()
	h := &host{stderr: &lockedBuffer{}}
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-host", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			h.mu.Lock()
			h.progress = append(h.progress, r.Params)
			h.mu.Unlock()
		},
		ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			h.mu.Lock()
			h.updates = append(h.updates, r.Params.URI)
			h.mu.Unlock()
		},
	})
	transport := e.serveTransport(h.stderr, "serve", "--config", cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var opts *mcp.ClientSessionOptions
	if version != "" {
		opts = &mcp.ClientSessionOptions{ProtocolVersion: version}
	}
	s, err := client.Connect(ctx, transport, opts)
	if err != nil {
		e.t.Fatalf("connect to mcp-guard serve: %v\nstderr:\n%s", err, h.stderr)
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

func (h *host) progressSeen() []*mcp.ProgressNotificationParams {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]*mcp.ProgressNotificationParams(nil), h.progress...)
}

func (h *host) updatesSeen() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.updates...)
}

// toolNames lists what the host sees.
func (h *host) toolNames(t *testing.T) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := h.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	return names
}

func (h *host) call(t *testing.T, name string, args any) (*mcp.CallToolResult, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return h.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
}

func resultText(r *mcp.CallToolResult) string {
	if r == nil {
		return "(no result)"
	}
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// rawHost speaks JSON-RPC lines to mcp-guard serve directly, for what the
// SDK clients will not send or cannot show.
type rawHost struct {
	t      testing.TB
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	stderr *lockedBuffer

	initResult string // the raw initialize result mcp-guard sent
}

func (e *env) rawConnect(cfg string) *rawHost {
	e.t.Helper()
	return e.rawConnectCaps(cfg, "{}")
}

// rawConnectCaps is rawConnect for a host declaring caps.
func (e *env) rawConnectCaps(cfg, caps string) *rawHost {
	e.t.Helper()
	r := &rawHost{t: e.t, stderr: &lockedBuffer{}}
	if e.inProcess() {
		in, out := e.serveHere(r.stderr, "serve", "--config", cfg)
		r.in, r.out = in, bufio.NewReaderSize(out, 1<<20)
		e.t.Cleanup(func() {
			if e.t.Failed() {
				e.t.Logf("mcp-guard stderr:\n%s", r.stderr)
			}
		})
		r.handshake(caps)
		return r
	}
	cmd := e.serveCmd(cfg)
	r.cmd = cmd
	cmd.Stderr = r.stderr
	var err error
	if r.in, err = cmd.StdinPipe(); err != nil {
		e.t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		e.t.Fatal(err)
	}
	r.out = bufio.NewReaderSize(out, 1<<20)
	if err := cmd.Start(); err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() {
		r.in.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
		if e.t.Failed() {
			e.t.Logf("mcp-guard stderr:\n%s", r.stderr)
		}
	})
	r.handshake(caps)
	return r
}

// handshake initializes the session as a host declaring caps.
func (r *rawHost) handshake(caps string) {
	r.t.Helper()
	r.send(`{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":` + caps + `,"clientInfo":{"name":"raw","version":"1"}}}`)
	r.initResult = string(r.waitID(`"init"`).Result)
	r.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

func (r *rawHost) send(line string) {
	r.t.Helper()
	if _, err := io.WriteString(r.in, line+"\n"); err != nil {
		r.t.Fatalf("write to mcp-guard: %v", err)
	}
}

// waitID reads lines until the response with the given raw id arrives.
func (r *rawHost) waitID(id string) rpcMsg {
	r.t.Helper()
	type res struct {
		m   rpcMsg
		err error
	}
	ch := make(chan res, 1)
	go func() {
		for {
			line, err := r.out.ReadString('\n')
			if err != nil {
				ch <- res{err: err}
				return
			}
			var m rpcMsg
			if json.Unmarshal([]byte(line), &m) == nil && string(m.ID) == id && m.Method == "" {
				m.line = strings.TrimSpace(line)
				ch <- res{m: m}
				return
			}
		}
	}()
	select {
	case x := <-ch:
		if x.err != nil {
			r.t.Fatalf("reading mcp-guard's stdout for id %s: %v\nstderr:\n%s", id, x.err, r.stderr)
		}
		return x.m
	case <-time.After(20 * time.Second):
		r.t.Fatalf("no response with id %s\nstderr:\n%s", id, r.stderr)
	}
	return rpcMsg{}
}

// eventually polls cond until it holds or the deadline passes.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
