package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-guard/mcp-guard/approvals"
	"github.com/mcp-guard/mcp-guard/ledger"
	"github.com/mcp-guard/mcp-guard/sandbox"
)

// The benchmarks compare one allowed tools/call made three ways in the same
// run: directly to the fake upstream, through a do-nothing byte relay, and
// through mcp-guard serve with its ledger (every call committed durably
// before it is forwarded, and its outcome after). scripts/bench prints the
// ratios. Each reports p50 and p99 latency.

func benchSession(b *testing.B, how string) (*mcp.ClientSession, int) {
	b.Helper()
	binaries(b)
	dir := b.TempDir()
	script := filepath.Join(dir, "s.json")
	os.WriteFile(script, []byte(`{"tools":[{"name":"echo","inputSchema":{"type":"object","properties":{"message":{"type":"string"}}}}]}`), 0o600)
	upstream := []string{bins.fakeup, "--script", script}
	var cmd *exec.Cmd
	switch how {
	case "direct":
		cmd = exec.Command(upstream[0], upstream[1:]...)
	case "relay":
		cmd = exec.Command(bins.relay, upstream...)
	case "relay-durable":
		cmd = exec.Command(bins.relay, append([]string{"--ledger", filepath.Join(dir, "ledger.db")}, upstream...)...)
	case "guard", "guard-write", "witnessed":
		// guard has no witness; witnessed commits a head to a file after
		// every commit (witness_every = 1), off the call's path.
		// guard-write classifies the tool write, so each call also passes
		// L7's check for an identical interrupted call.
		witness := "witness = []\n"
		if how == "witnessed" {
			witness = fmt.Sprintf("witness = [%q]\nwitness_every = 1\n", "file:"+filepath.Join(dir, "heads.jsonl"))
		}
		rules := allowAll
		if how == "guard-write" {
			rules = strings.Replace(allowAll, `class = "read"`, `class = "write"`, 1)
		}
		cfg := filepath.Join(dir, "config.toml")
		os.WriteFile(cfg, []byte(fmt.Sprintf("[ledger]\npath = %q\n"+witness+benchLimits+"[[server]]\nname = \"b\"\ncommand = [%q, \"--script\", %q]\n%s",
			filepath.Join(dir, "state", "ledger.db"), bins.fakeup, script, rules)), 0o600)
		cmd = exec.Command(bins.guard, "serve", "--config", cfg)
		cmd.Env = append([]string{"HOME=" + dir, "MCP_GUARD_CPUPROFILE=" + os.Getenv("MCP_GUARD_CPUPROFILE"), "MCP_GUARD_TRACE=" + os.Getenv("MCP_GUARD_TRACE")}, coverEnv()...)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	s, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s, cmd.Process.Pid
}

// benchLimits lets a benchmark make the same allowed call many times: the
// defaults would stop it (identical repeats, per-minute rate), by design.
const benchLimits = "[limits]\ncalls_per_session = 100000000\ncalls_per_tool_per_minute = 100000000\nidentical_call_repeats = 100000000\n"

func benchName(how string) string {
	if how == "guard" || how == "guard-write" || how == "witnessed" {
		return "b__echo"
	}
	return "echo"
}

// timeCalls makes warm untimed calls, then b.N timed ones one after
// another, each of which must succeed and satisfy ok, and reports their
// latency.
func timeCalls(b *testing.B, s *mcp.ClientSession, pid int, params *mcp.CallToolParams, warm int, ok func(*mcp.CallToolResult) bool) {
	b.Helper()
	ctx := context.Background()
	for range warm {
		if _, err := s.CallTool(ctx, params); err != nil {
			b.Fatal(err)
		}
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	cpu := startProcCPU(pid)
	for range b.N {
		t0 := time.Now()
		res, err := s.CallTool(ctx, params)
		lat = append(lat, time.Since(t0))
		if err != nil || res.IsError || !ok(res) {
			b.Fatalf("call: %v %v %s", err, res, resultText(res))
		}
	}
	b.StopTimer()
	cpu.report(b)
	reportLatency(b, lat)
}

// procCPU meters another process's CPU time (user and system, from
// /proc/PID/stat), for the metric "proc-cpu-µs/op": what the process the
// client talks to (serve, the relay, or the server itself) spent per call.
// It is steadier than the wall time on a shared machine. A pid of 0
// reports nothing.
type procCPU struct {
	pid   int
	start time.Duration
}

func startProcCPU(pid int) procCPU {
	if pid == 0 {
		return procCPU{}
	}
	return procCPU{pid: pid, start: procCPUTime(pid)}
}

func (m procCPU) report(b *testing.B) {
	if m.pid == 0 || b.N == 0 {
		return
	}
	if used := procCPUTime(m.pid) - m.start; used > 0 {
		b.ReportMetric(float64(used.Microseconds())/float64(b.N), "proc-cpu-µs/op")
	}
}

// procCPUTime is pid's utime + stime so far; 0 if unreadable. The fields
// are in clock ticks, 100 a second on Linux.
func procCPUTime(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name (field 2) may hold spaces: count from after it.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0
	}
	return time.Duration(ut+st) * 10 * time.Millisecond
}

func reportLatency(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkCall is one caller making allowed calls one after another.
func BenchmarkCall(b *testing.B) {
	for _, how := range []string{"direct", "relay", "relay-durable", "guard", "guard-write", "witnessed"} {
		b.Run(how, func(b *testing.B) {
			s, pid := benchSession(b, how)
			params := &mcp.CallToolParams{Name: benchName(how), Arguments: map[string]any{"message": "hello"}}
			timeCalls(b, s, pid, params, 20, func(*mcp.CallToolResult) bool { return true })
		})
	}
}

// BenchmarkCall8 is 8 concurrent callers on one session: group commit keeps
// mcp-guard's throughput near the direct call's.
func BenchmarkCall8(b *testing.B) {
	for _, how := range []string{"direct", "relay", "relay-durable", "guard", "guard-write"} {
		b.Run(how, func(b *testing.B) {
			s, pid := benchSession(b, how)
			params := &mcp.CallToolParams{Name: benchName(how), Arguments: map[string]any{"message": "hello"}}
			callParallel(b, s, pid, params)
		})
	}
}

// callParallel times params called by 8 callers at once on s.
func callParallel(b *testing.B, s *mcp.ClientSession, pid int, params *mcp.CallToolParams) {
	b.SetParallelism(4) // 2 cores × 4 = 8 callers
	b.ResetTimer()
	cpu := startProcCPU(pid)
	defer cpu.report(b)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			res, err := s.CallTool(context.Background(), params)
			if err != nil || res.IsError {
				b.Errorf("call: %v", err)
				return
			}
		}
	})
}

// BenchmarkCallLarge is BenchmarkCall with 100 KB of arguments, which the
// fake upstream's echo sends back as its result: a file written, or read,
// whole. Every byte is read, checked, recorded and forwarded.
func BenchmarkCallLarge(b *testing.B) {
	big := strings.Repeat("x", 100_000)
	for _, how := range []string{"direct", "guard"} {
		b.Run(how, func(b *testing.B) {
			s, pid := benchSession(b, how)
			params := &mcp.CallToolParams{Name: benchName(how), Arguments: map[string]any{"message": "hello", "content": big}}
			timeCalls(b, s, pid, params, 5, func(*mcp.CallToolResult) bool { return true })
		})
	}
}

// BenchmarkCallHTTP is BenchmarkCall's guard over streamable HTTP (`serve
// --http`, the official go-sdk client): the HTTP front's own cost shows
// here, against BenchmarkCall/guard. Sub-benchmark 8 is 8 concurrent
// callers on one session.
func BenchmarkCallHTTP(b *testing.B) {
	b.Run("1", func(b *testing.B) {
		s, pid, params := benchHTTPSession(b)
		timeCalls(b, s, pid, params, 20, func(*mcp.CallToolResult) bool { return true })
	})
	b.Run("8", func(b *testing.B) {
		s, pid, params := benchHTTPSession(b)
		callParallel(b, s, pid, params)
	})
}

// benchHTTPSession starts serve --http with the fake upstream and an allow
// rule, and connects the go-sdk client to it.
func benchHTTPSession(b *testing.B) (*mcp.ClientSession, int, *mcp.CallToolParams) {
	b.Helper()
	e := newBinaryEnv(b) // mcp-guard's process is what is measured
	if path := os.Getenv("MCP_GUARD_CPUPROFILE"); path != "" {
		e.extra = append(e.extra, "MCP_GUARD_CPUPROFILE="+path) // as benchSession's serve
	}
	script := `{"tools":[{"name":"echo","inputSchema":{"type":"object","properties":{"message":{"type":"string"}}}}]}`
	cfg := e.config(benchLimits, e.fake("b", script), allowAll)
	endpoint, _ := e.httpServe(cfg, "--http", "127.0.0.1:0")
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	s, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc, DisableStandaloneSSE: true},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s, e.servePID, &mcp.CallToolParams{Name: "b__echo", Arguments: map[string]any{"message": "hello"}}
}

// TestBenchHarnessWorks runs each benchmark setup once, so `make test`
// notices when the harness breaks.
func TestBenchHarnessWorks(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	for name, session := range map[string]func(*testing.B) *mcp.ClientSession{
		"stdio": func(b *testing.B) *mcp.ClientSession { s, _ := benchSession(b, "guard"); return s },
		"floor": func(b *testing.B) *mcp.ClientSession { s, _ := benchSession(b, "relay-durable"); return s },
		"http":  func(b *testing.B) *mcp.ClientSession { s, _, _ := benchHTTPSession(b); return s },
	} {
		tool := "b__echo"
		if name == "floor" {
			tool = "echo" // the relay's upstream, not namespaced
		}
		res := testing.Benchmark(func(b *testing.B) {
			s := session(b)
			for range b.N {
				if _, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}}); err != nil {
					b.Fatal(err)
				}
			}
		})
		if res.N == 0 || !strings.Contains(res.String(), "ns/op") {
			t.Fatalf("%s benchmark did not run: %v", name, res)
		}
	}
}

// BenchmarkApproveToUpstream measures how long a call held by an ask takes to
// reach the upstream after the operator's decision is committed (another
// process deciding; serve notices by polling the approval).
func BenchmarkApproveToUpstream(b *testing.B) {
	binaries(b)
	dir := b.TempDir()
	script := filepath.Join(dir, "s.json")
	os.WriteFile(script, []byte(`{"tools":[{"name":"echo","inputSchema":{"type":"object"}}]}`), 0o600)
	cfg := filepath.Join(dir, "config.toml")
	os.WriteFile(cfg, []byte(fmt.Sprintf("[ledger]\npath = %q\n[limits]\napproval_wait = \"60s\"\nidentical_call_repeats = 1000000\n[[server]]\nname = \"b\"\ncommand = [%q, \"--script\", %q]\n[[rule]]\nserver = \"b\"\ntool = \"*\"\nclass = \"write\"\naction = \"ask\"\n",
		filepath.Join(dir, "state", "ledger.db"), bins.fakeup, script)), 0o600)
	cmd := exec.Command(bins.guard, "serve", "--config", cfg)
	cmd.Env = append([]string{"HOME=" + dir}, coverEnv()...)
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	s, err := client.Connect(context.Background(), &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	led, err := ledger.Open(context.Background(), filepath.Join(dir, "state", "ledger.db"), ledger.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer led.Close()
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		done := make(chan error, 1)
		go func() {
			_, err := s.CallTool(context.Background(), &mcp.CallToolParams{Name: "b__echo", Arguments: map[string]any{"i": i}})
			done <- err
		}()
		var as []ledger.Approval
		for len(as) == 0 {
			as, _ = led.Approvals(context.Background(), ledger.ApprovalPending, 0, 1)
		}
		t0 := time.Now()
		if err := led.DecideApproval(context.Background(), as[0].ID, as[0].PresentationDigest, true, "", approvals.Decidable); err != nil {
			b.Fatal(err)
		}
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	reportLatency(b, lat)
}

// BenchmarkUpstreamStart is the cost of starting a stdio server (the fake,
// which exits at once when its stdin ends) directly and through the
// sandbox launcher with a read-only policy and no network: what the
// sandbox adds to every start and restart of a server.
func BenchmarkUpstreamStart(b *testing.B) {
	binaries(b)
	dir := b.TempDir()
	script := filepath.Join(dir, "s.json")
	os.WriteFile(script, []byte(`{"tools":[]}`), 0o600)
	command := []string{bins.fakeup, "--script", script}
	program, eff, err := sandbox.ForCommand(sandbox.Policy{Read: []string{dir}, Network: sandbox.Network{Mode: "none"}}, command, dir, dir)
	if err != nil {
		b.Fatal(err)
	}
	for _, how := range []string{"direct", "sandboxed"} {
		argv := command
		if how == "sandboxed" {
			argv = sandbox.Launch(bins.guard, eff, 0, program, command)
		}
		b.Run(how, func(b *testing.B) {
			var lat []time.Duration
			for b.Loop() {
				start := time.Now()
				cmd := exec.Command(argv[0], argv[1:]...)
				cmd.Env = []string{"HOME=" + dir}
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("%s: %v\n%s", how, err, out)
				}
				lat = append(lat, time.Since(start))
			}
			reportLatency(b, lat)
		})
	}
}

// TestBenchClientWorks runs scripts/bench's HTTP client (testdata/benchclient)
// against serve --http once, so `make test` notices when it breaks: it must
// wait for "go", make exactly the calls asked, each reaching the upstream,
// and print the line benchsuite.mjs reads.
func TestBenchClientWorks(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	e := newEnv(t)
	client := filepath.Join(e.dir, "benchclient")
	if out, err := exec.Command("go", "build", "-o", client, "../../testdata/benchclient").CombinedOutput(); err != nil {
		t.Fatalf("go build benchclient: %v\n%s", err, out)
	}
	script := `{"tools":[{"name":"echo","inputSchema":{"type":"object","properties":{"message":{"type":"string"}}}}]}`
	cfg := e.config(benchLimits, e.fake("b", script), allowAll)
	endpoint, _ := e.httpServe(cfg, "--http", "127.0.0.1:0")
	plan := fmt.Sprintf(`{"url": %q, "tool": "b__echo", "calls": 40, "concurrency": 8}`, endpoint)
	cmd := exec.Command(client, plan)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	r := bufio.NewReader(stdout)
	if line, err := r.ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("first line %q, %v; want ready", line, err)
	}
	warm := len(e.calls("b"))
	if warm < 51 {
		t.Fatalf("%d calls before go, want the first call and 50 warm-up calls", warm)
	}
	stdin.Write([]byte("go\n"))
	line, err := r.ReadString('\n')
	if err != nil {
		t.Fatalf("result line: %v", err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("benchclient: %v", err)
	}
	var res struct {
		Calls       int     `json:"calls"`
		Concurrency int     `json:"concurrency"`
		P50         int64   `json:"p50_us"`
		PerSecond   int64   `json:"calls_per_s"`
		Latencies   []int64 `json:"latencies_us"`
	}
	if err := json.Unmarshal([]byte(line), &res); err != nil {
		t.Fatalf("result %q: %v", line, err)
	}
	if res.Calls != 40 || res.Concurrency != 8 || len(res.Latencies) != 40 || res.P50 <= 0 || res.PerSecond <= 0 {
		t.Fatalf("result %+v", res)
	}
	if got := len(e.calls("b")) - warm; got != 40 {
		t.Fatalf("the upstream received %d timed calls, want 40", got)
	}
}
