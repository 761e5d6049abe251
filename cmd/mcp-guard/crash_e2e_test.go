package main

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-guard/mcp-guard/internal/canon"
	"github.com/mcp-guard/mcp-guard/ledger"
)

// The crash and load tests run short in `make test` and in full with
// MCP_GUARD_SOAK=1 (`make soak`).
func soakRun() bool { return os.Getenv("MCP_GUARD_SOAK") != "" }

// soakInt is def, or soakDef under MCP_GUARD_SOAK; the environment variable
// name overrides both.
func soakInt(t *testing.T, name string, def, soakDef int) int {
	t.Helper()
	if v := os.Getenv(name); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want a positive number", name, v)
		}
		return n
	}
	if soakRun() {
		return soakDef
	}
	return def
}

// streamHost is a raw JSON-RPC host that keeps many requests in flight on
// one mcp-guard serve process and knows exactly which of them were answered.
type streamHost struct {
	t      testing.TB
	cmd    *exec.Cmd
	in     io.WriteCloser
	stderr *lockedBuffer
	done   chan struct{} // closed when serve's stdout ends

	wmu     sync.Mutex // one write per line
	mu      sync.Mutex
	waiting map[string]chan rpcMsg
	next    atomic.Int64
	waited  bool
}

// startStream starts mcp-guard serve with cfg and completes the MCP handshake.
func (e *env) startStream(cfg string) *streamHost {
	e.t.Helper()
	s, err := e.launchStream(cfg)
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

// launchStream is startStream for any goroutine: it returns its error.
func (e *env) launchStream(cfg string) (*streamHost, error) {
	s := &streamHost{t: e.t, cmd: e.serveCmd(cfg), stderr: &lockedBuffer{}, done: make(chan struct{}), waiting: map[string]chan rpcMsg{}}
	s.cmd.Stderr = s.stderr
	var err error
	if s.in, err = s.cmd.StdinPipe(); err != nil {
		return nil, err
	}
	out, err := s.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	go s.read(out)
	e.t.Cleanup(func() {
		s.kill()
		if e.t.Failed() {
			e.t.Logf("mcp-guard (pid %d) stderr:\n%s", s.cmd.Process.Pid, s.stderr)
		}
	})
	m, ok := s.request("initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"stream","version":"1"}}`, 30*time.Second)
	if !ok || m.Error != nil {
		return nil, fmt.Errorf("initialize: answered=%v %s\nstderr:\n%s", ok, m.line, s.stderr)
	}
	s.notify("notifications/initialized")
	return s, nil
}

func (s *streamHost) read(out io.Reader) {
	defer close(s.done)
	r := bufio.NewReaderSize(out, 1<<20)
	for {
		line, err := r.ReadString('\n')
		if len(line) > 0 {
			var m rpcMsg
			if json.Unmarshal([]byte(line), &m) == nil && m.Method == "" && len(m.ID) > 0 {
				m.line = strings.TrimSpace(line)
				s.mu.Lock()
				ch := s.waiting[string(m.ID)]
				delete(s.waiting, string(m.ID))
				s.mu.Unlock()
				if ch != nil {
					ch <- m
				}
			}
		}
		if err != nil {
			return
		}
	}
}

func (s *streamHost) write(line string) bool {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	_, err := io.WriteString(s.in, line+"\n")
	return err == nil
}

func (s *streamHost) notify(method string) {
	s.write(`{"jsonrpc":"2.0","method":"` + method + `"}`)
}

// request sends one request and waits for its answer. ok is false when serve
// ended (or its stdin closed) before answering; a wait past timeout fails
// the test: no call may hang.
func (s *streamHost) request(method, params string, timeout time.Duration) (m rpcMsg, ok bool) {
	id := strconv.Quote("q" + strconv.FormatInt(s.next.Add(1), 10))
	ch := make(chan rpcMsg, 1)
	s.mu.Lock()
	s.waiting[id] = ch
	s.mu.Unlock()
	if !s.write(`{"jsonrpc":"2.0","id":` + id + `,"method":"` + method + `","params":` + params + `}`) {
		return rpcMsg{}, false
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case m := <-ch:
		return m, true
	case <-s.done:
		select { // the answer may have been read just before the end
		case m := <-ch:
			return m, true
		default:
			return rpcMsg{}, false
		}
	case <-t.C:
		s.t.Errorf("request %s %s: no answer within %s", id, method, timeout)
		return rpcMsg{}, false
	}
}

// callTool sends tools/call and returns the raw answer.
func (s *streamHost) callTool(name, args string, timeout time.Duration) (rpcMsg, bool) {
	return s.request("tools/call", `{"name":"`+name+`","arguments":`+args+`}`, timeout)
}

// kill sends SIGKILL to serve (kill -9) and reaps it.
func (s *streamHost) kill() {
	s.mu.Lock()
	waited := s.waited
	s.waited = true
	s.mu.Unlock()
	if waited {
		return
	}
	s.cmd.Process.Signal(syscall.SIGKILL)
	s.reap()
}

// close ends serve's stdin, which ends serve, and reaps it; a serve that
// does not stop within 30s is killed and the test fails.
func (s *streamHost) close() {
	s.mu.Lock()
	waited := s.waited
	s.waited = true
	s.mu.Unlock()
	if waited {
		return
	}
	s.in.Close()
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		s.t.Errorf("mcp-guard serve (pid %d) did not exit within 30s of its stdin closing", s.cmd.Process.Pid)
		s.cmd.Process.Signal(syscall.SIGKILL)
	}
	s.reap()
}

func (s *streamHost) reap() {
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		s.t.Errorf("serve's stdout still open 30s after it was killed")
	}
	s.in.Close()
	s.cmd.Wait()
}

// toolResult reads a tools/call answer: the text of its content and isError.
func toolResult(m rpcMsg) (text string, isError bool, err error) {
	if m.Error != nil {
		return "", false, fmt.Errorf("JSON-RPC error %d: %s", m.Error.Code, m.Error.Message)
	}
	var r struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		IsError bool `json:"isError"`
	}
	if err := json.Unmarshal(m.Result, &r); err != nil {
		return "", false, fmt.Errorf("result %s: %v", m.Result, err)
	}
	var b strings.Builder
	for _, c := range r.Content {
		b.WriteString(c.Text)
	}
	return b.String(), r.IsError, nil
}

// upstreamEchoDigest is the SHA-256 of the exact result bytes fakeup's echo
// behaviour sends for tool with these raw arguments (fakeupstream's
// echoResult), which is what the ledger's result_digest covers. Computed
// from the text the host received, it ties what the host got to the row.
func upstreamEchoDigest(tool, args string) string {
	text, _ := json.Marshal(args) // the test's arguments need no HTML escaping
	raw := `{"content":[{"type":"text","text":` + string(text) + `}],"structuredContent":{"arguments":` + args + `,"tool":"` + tool + `"}}`
	sum := sha256.Sum256([]byte(raw))
	return hex.EncodeToString(sum[:])
}

// allCalls reads every call row, paging through the ledger.
func allCalls(t testing.TB, led *ledger.Ledger) []ledger.CallRow {
	t.Helper()
	var out []ledger.CallRow
	var before int64
	for {
		rows, err := led.Calls(context.Background(), ledger.CallFilter{Before: before, Limit: 1000})
		if err != nil {
			t.Fatalf("read the ledger's calls: %v", err)
		}
		out = append(out, rows...)
		if len(rows) < 1000 {
			return out
		}
		before = rows[len(rows)-1].ID
	}
}

// receivedCalls reads fakeup's record: the raw arguments of every tools/call
// it received, by the "id" argument the test gave each call.
func (e *env) receivedCalls(name string) map[string][]string {
	e.t.Helper()
	out := map[string][]string{}
	for _, m := range e.calls(name) {
		var p struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		}
		if err := json.Unmarshal(m.Params, &p); err != nil {
			e.t.Fatalf("upstream record line %s: %v", m.line, err)
		}
		out[argID(p.Arguments)] = append(out[argID(p.Arguments)], string(p.Arguments))
	}
	return out
}

// argID is the unique "id" argument every test call carries ("" if none).
func argID(args []byte) string {
	var a struct {
		ID string `json:"id"`
	}
	json.Unmarshal(args, &a)
	return a.ID
}

func canonArgsDigest(t testing.TB, args string) string {
	t.Helper()
	d, err := canon.Digest([]byte(args))
	if err != nil {
		t.Fatalf("digest of %s: %v", args, err)
	}
	return d
}

// runGuard runs the real binary from any goroutine (no t.Fatal).
func (e *env) runGuard(args ...string) (string, int, error) {
	cmd := exec.Command(bins.guard, args...)
	cmd.Env = append(append([]string{"HOME=" + e.dir, "PATH=/usr/bin:/bin"}, coverEnv()...), e.extra...)
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return string(out), ee.ExitCode(), nil
	}
	return string(out), 0, err
}

const crashTools = `{"tools":[
{"name":"fast","inputSchema":{"type":"object"}},
{"name":"slow","inputSchema":{"type":"object"}},
{"name":"slower","inputSchema":{"type":"object"}},
{"name":"ask","inputSchema":{"type":"object"}}],
"calls":{"slow":{"do":"sleep","ms":300},"slower":{"do":"sleep","ms":5000}}}`

const crashRules = `
[[rule]]
server = "up"
tool = "ask"
class = "write"
action = "ask"

[[rule]]
server = "up"
tool = "*"
class = "read"
action = "allow"
`

// generousLimits keeps the session limits out of the way of the stream of
// distinct calls these tests make.
const generousLimits = `[limits]
calls_per_session = 1000000
calls_per_tool_per_minute = 1000000
identical_call_repeats = 1000000
consecutive_denials = 1000000
pending_approvals = 1024
`

// crashCall is one call the crash test's host sent, and what it saw.
type crashCall struct {
	round    int
	tool     string
	args     string
	answered bool   // a response arrived before serve died
	text     string // the result's text
	isError  bool   // result isError
	rpcErr   string // a JSON-RPC error instead of a result
}

// kill -9 of serve at random moments under a stream of fast, slow and ask
// calls (asks approved or denied now and then from another process with
// `mcp-guard approve`/`deny`). After each restart, once recovery ran: verify
// passes; no call reached the upstream twice; every call the upstream
// received has exactly one ledger row with the same arguments digest, in
// state done, failed or interrupted; every row is done, failed, refused or
// interrupted (none left started or waiting); an answer the host saw is
// backed by its row (and, when done, by its result digest).
//
// MCP_GUARD_CRASH_ROUNDS sets the rounds (default 3; 50 under
// MCP_GUARD_SOAK); MCP_GUARD_CRASH_SEED replays a run's random choices.
func TestCrash_KillNineUnderLoad(t *testing.T) {
	rounds := soakInt(t, "MCP_GUARD_CRASH_ROUNDS", 3, 50)
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("MCP_GUARD_CRASH_SEED"); v != "" {
		var err error
		if seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("MCP_GUARD_CRASH_SEED=%q", v)
		}
	}
	t.Logf("%d rounds, MCP_GUARD_CRASH_SEED=%d", rounds, seed)
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))

	e := newEnv(t)
	cfg := filepath.Join(e.dir, "config.toml")
	writeFile(t, cfg, fmt.Sprintf("[ledger]\npath = %q\nlease_ttl = \"1s\"\n\n%s\napproval_wait = \"2s\"\n\n%s%s",
		filepath.Join(e.state, "ledger.db"), generousLimits, e.fake("up", crashTools), crashRules))
	led := e.openLedger()

	var (
		mu    sync.Mutex
		sent  = map[string]*crashCall{} // by the "id" argument
		stats struct{ kills, approved, denied, waitingAtKill, startRecovery int }
	)
	const workers = 6
	tools := []string{"fast", "fast", "fast", "fast", "slow", "slow", "slower", "ask", "ask"}

	check := func(round int) {
		t.Helper()
		final := map[string]bool{ledger.StateDone: true, ledger.StateFailed: true, ledger.StateRefused: true, ledger.StateInterrupted: true}
		var rows []ledger.CallRow
		deadline := time.Now().Add(15 * time.Second)
		for {
			rows = allCalls(t, led)
			var open []string
			for _, r := range rows {
				if !final[r.State] {
					open = append(open, fmt.Sprintf("call %d %s %s decision=%s state=%s session=%s", r.ID, r.Tool, r.Args, r.Decision, r.State, r.SessionID))
					if r.State == ledger.StateWaiting {
						open[len(open)-1] += " (an ask the killed serve held for the operator: nothing will ever forward or end it unless recovery releases it)"
					}
				}
			}
			if len(open) == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: 15s after the restart, %d calls are still not done, failed, refused or interrupted (the serve that held them was killed):\n%s",
					round, len(open), strings.Join(open, "\n"))
			}
			time.Sleep(50 * time.Millisecond)
		}
		if out, code := e.mcpGuard("verify", "--config", cfg); code != 0 || !strings.Contains(out, "hash chain intact") {
			t.Fatalf("round %d: verify (exit %d):\n%s", round, code, out)
		}
		received := e.receivedCalls("up")
		mu.Lock()
		defer mu.Unlock()
		byID := map[string]ledger.CallRow{}
		for _, r := range rows {
			id := argID(r.Args)
			c := sent[id]
			if c == nil {
				t.Fatalf("round %d: ledger call %d has arguments %s the host never sent", round, r.ID, r.Args)
			}
			if prev, dup := byID[id]; dup {
				t.Fatalf("round %d: calls %d and %d both record the host's call %s", round, prev.ID, r.ID, c.args)
			}
			byID[id] = r
			if r.Tool != c.tool || string(r.Args) != c.args || r.ArgsDigest != canonArgsDigest(t, c.args) {
				t.Fatalf("round %d: call %d records %s %s digest %s; the host sent %s %s", round, r.ID, r.Tool, r.Args, r.ArgsDigest, c.tool, c.args)
			}
			if r.State == ledger.StateDone {
				if len(received[id]) == 0 {
					t.Fatalf("round %d: call %d (%s) is done, but the upstream never received it", round, r.ID, c.args)
				}
				if r.ResultDigest != upstreamEchoDigest(c.tool, c.args) {
					t.Fatalf("round %d: call %d result digest %s is not that of the upstream's answer to %s", round, r.ID, r.ResultDigest, c.args)
				}
			}
		}
		for id, got := range received {
			if len(got) != 1 {
				t.Fatalf("round %d: the upstream received the call %s %d times: %v", round, id, len(got), got)
			}
			r, ok := byID[id]
			if !ok {
				t.Fatalf("round %d: the upstream received %s, which has no ledger row", round, got[0])
			}
			if r.ArgsDigest != canonArgsDigest(t, got[0]) {
				t.Fatalf("round %d: the upstream received %s; its row %d has arguments digest %s", round, got[0], r.ID, r.ArgsDigest)
			}
			switch {
			case r.State != ledger.StateDone && r.State != ledger.StateFailed && r.State != ledger.StateInterrupted:
				t.Fatalf("round %d: the upstream received %s; its row %d is %s (decision %s)", round, got[0], r.ID, r.State, r.Decision)
			case r.Decision != "allow" && r.Decision != "ask":
				t.Fatalf("round %d: the upstream received %s; its row %d has decision %s", round, got[0], r.ID, r.Decision)
			}
		}
		// An approval runs its call at most once, and only a used approval
		// lets an ask reach the upstream.
		used := map[int64]bool{}
		for before := int64(0); ; {
			as, err := led.Approvals(context.Background(), "", before, 1000)
			if err != nil {
				t.Fatalf("round %d: approvals: %v", round, err)
			}
			for _, a := range as {
				if a.State == ledger.ApprovalUsed {
					used[a.CallID] = true
				}
			}
			if len(as) < 1000 {
				break
			}
			before = as[len(as)-1].ID
		}
		for id, r := range byID {
			if r.Decision != "ask" {
				continue
			}
			if _, reached := received[id]; reached && !used[r.ID] {
				t.Fatalf("round %d: the ask %s reached the upstream, but its approval is not used", round, r.Args)
			}
			if used[r.ID] && r.State != ledger.StateDone && r.State != ledger.StateFailed && r.State != ledger.StateInterrupted {
				t.Fatalf("round %d: the ask %s has a used approval, but its row %d is %s", round, r.Args, r.ID, r.State)
			}
		}
		for id, c := range sent {
			r, hasRow := byID[id]
			_, reached := received[id]
			switch {
			case !c.answered:
				// Killed before or while it ran: any final state, or no row
				// at all if serve died before recording it, and then it
				// must not have reached the upstream (recorded first, G4).
				if !hasRow && reached {
					t.Fatalf("round %d: %s reached the upstream without a ledger row", round, c.args)
				}
			case !hasRow:
				t.Fatalf("round %d: the host got an answer to %s (%q %s) but the ledger has no row for it", round, c.args, c.text, c.rpcErr)
			case c.rpcErr != "":
				t.Fatalf("round %d: %s got a JSON-RPC error: %s (row %d %s)", round, c.args, c.rpcErr, r.ID, r.State)
			case c.isError:
				// Only asks are refused: denied, or not decided in time.
				if c.tool != "ask" || r.State != ledger.StateRefused || reached {
					t.Fatalf("round %d: %s answered with an error %q; row %d is %s, reached upstream %v", round, c.args, c.text, r.ID, r.State, reached)
				}
			default:
				if c.text != c.args || !reached {
					t.Fatalf("round %d: %s answered %q, upstream received it: %v", round, c.args, c.text, reached)
				}
				switch r.State {
				case ledger.StateDone:
					if r.ResultDigest != upstreamEchoDigest(c.tool, c.text) {
						t.Fatalf("round %d: the host's result for %s does not match row %d's digest", round, c.args, r.ID)
					}
				case ledger.StateInterrupted:
					// The outcome is committed off the host's path; serve was
					// killed after answering, before that commit.
				default:
					t.Fatalf("round %d: %s was answered, but row %d is %s", round, c.args, r.ID, r.State)
				}
			}
		}
	}

	start := time.Now()
	for round := 1; round <= rounds; round++ {
		s := e.startStream(cfg)
		if round > 1 {
			check(round - 1)
		}
		// A stream of calls from several workers until serve dies.
		var wg sync.WaitGroup
		var n atomic.Int64
		for w := range workers {
			wrng := rand.New(rand.NewPCG(rng.Uint64(), uint64(w)))
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					c := &crashCall{round: round, tool: tools[wrng.IntN(len(tools))]}
					id := fmt.Sprintf("r%d-w%d-%d", round, w, n.Add(1))
					c.args = `{"id":"` + id + `"}`
					mu.Lock()
					sent[id] = c
					mu.Unlock()
					m, ok := s.callTool("up__"+c.tool, c.args, 60*time.Second)
					if !ok {
						return
					}
					text, isErr, err := toolResult(m)
					mu.Lock()
					c.answered, c.text, c.isError = true, text, isErr
					if err != nil {
						c.rpcErr = err.Error()
					}
					mu.Unlock()
				}
			}()
		}
		// The operator, from another process: approves or denies some of
		// the pending asks, leaves others to time out.
		stopOp := make(chan struct{})
		opDone := make(chan struct{})
		orng := rand.New(rand.NewPCG(rng.Uint64(), 99))
		go func() {
			defer close(opDone)
			seen := map[int64]bool{}
			for {
				select {
				case <-stopOp:
					return
				case <-time.After(time.Duration(50+orng.IntN(150)) * time.Millisecond):
				}
				as, err := led.Approvals(context.Background(), ledger.ApprovalPending, 0, 50)
				if err != nil {
					continue
				}
				for _, a := range as {
					if seen[a.ID] {
						continue
					}
					seen[a.ID] = true
					verb := ""
					switch p := orng.IntN(100); {
					case p < 60:
						verb = "approve"
					case p < 75:
						verb = "deny"
					}
					if verb == "" {
						continue
					}
					_, code, err := e.runGuard(verb, strconv.FormatInt(a.ID, 10), "--config", cfg, "--shown", a.PresentationDigest, "--reason", "crash test")
					if err == nil && code == 0 {
						mu.Lock()
						if verb == "approve" {
							stats.approved++
						} else {
							stats.denied++
						}
						mu.Unlock()
					}
				}
			}
		}()
		// kill -9 at a random moment.
		time.Sleep(time.Duration(150+rng.IntN(1350)) * time.Millisecond)
		if ws, err := led.Calls(context.Background(), ledger.CallFilter{State: ledger.StateWaiting}); err == nil {
			mu.Lock()
			stats.waitingAtKill += len(ws)
			mu.Unlock()
		}
		s.kill()
		stats.kills++
		wg.Wait()
		close(stopOp)
		<-opDone
		// Restart at once (the dead lease lapses while the new serve runs,
		// whose periodic recovery marks its calls) or after the lease
		// lapsed (recovery at start marks them). The sleep only picks the
		// scenario: the last heartbeat came before the kill, so 1.1s after
		// it the 1s lease has lapsed, and no assertion depends on which
		// recovery ran (check polls until every call is final).
		if rng.IntN(2) == 0 {
			stats.startRecovery++
			time.Sleep(1100 * time.Millisecond)
		}
	}
	s := e.startStream(cfg)
	check(rounds)
	s.close()

	mu.Lock()
	defer mu.Unlock()
	states := map[string]int{}
	rowOf := map[string]ledger.CallRow{}
	for _, r := range allCalls(t, led) {
		states[r.State]++
		rowOf[argID(r.Args)] = r
	}
	answeredInterrupted := 0
	for id, c := range sent {
		if c.answered && !c.isError && c.rpcErr == "" && rowOf[id].State == ledger.StateInterrupted {
			answeredInterrupted++
		}
	}
	received := len(e.receivedCalls("up"))
	var keys []string
	for k := range states {
		keys = append(keys, fmt.Sprintf("%s=%d", k, states[k]))
	}
	sort.Strings(keys)
	t.Logf("%d kills (%d restarted after the lease lapsed) in %s; %d calls sent, %d reached the upstream; rows: %s; approvals: %d approved, %d denied; %d asks waiting at a kill; %d results the host received are interrupted rows (killed before the outcome's commit)",
		stats.kills, stats.startRecovery, time.Since(start).Round(time.Millisecond), len(sent), received, strings.Join(keys, " "), stats.approved, stats.denied, stats.waitingAtKill, answeredInterrupted)
}
