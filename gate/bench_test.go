package gate

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-guard/mcp-guard/classify"
	"github.com/mcp-guard/mcp-guard/config"
	"github.com/mcp-guard/mcp-guard/ledger"
	"github.com/mcp-guard/mcp-guard/pin"
	"github.com/mcp-guard/mcp-guard/secrets"
	"github.com/mcp-guard/mcp-guard/testdata/benchcpu"
)

// The stage benchmarks time one allowed tools/call of class read as the
// proxy's fast path makes it (a pinned tool, an allow rule, the arguments
// {"message":"m123"}), stage by stage, over a real ledger file
// (synchronous=FULL): decide (exposure, secrets, rules, schema, flows,
// limits, L7, what the commit records), record (the durable record, then
// the lazy outcome), forward (to a forwarder that answers at once, the
// outcome recorded lazily) and the whole Run, alone and with 8 callers.
// Each reports the process's CPU per call (every thread: the ledger's
// writer too) beside ns/op; scripts/bench prints them. record and forward
// each queue one lazy outcome, so decide + record + forward counts one
// outcome more than run does.

// stageResult is what the fake upstream answers to echo.
const stageResult = `{"content":[{"type":"text","text":"m123"}]}`

// stageBench is a pipeline as serve builds it (default flows, the secrets
// stage on, the product's result limit) over a ledger file in a temporary
// directory, and the request the host makes.
type stageBench struct {
	l    *ledger.Ledger
	p    *Pipeline
	tmpl Request
	errs *errorCount
	fwd  Forwarder
}

// newStageBench builds the pipeline and one host session, outside the
// timer.
func newStageBench(tb testing.TB) *stageBench {
	tb.Helper()
	ctx := context.Background()
	l, err := ledger.Open(ctx, filepath.Join(tb.TempDir(), "ledger.db"), ledger.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { l.Close() })
	s, err := l.StartSession(ctx, ledger.SessionInfo{Kind: "bench"})
	if err != nil {
		tb.Fatal(err)
	}
	rules, err := classify.Compile([]classify.Rule{{Server: "*", Tool: "*", Class: classify.Read, Action: classify.Allow}})
	if err != nil {
		tb.Fatal(err)
	}
	flows, err := classify.CompileFlows(nil, false)
	if err != nil {
		tb.Fatal(err)
	}
	schema, err := pin.CompileSchema([]byte(`{"type":"object","properties":{"message":{"type":"string"}}}`), pin.SchemaLimits{})
	if err != nil {
		tb.Fatal(err)
	}
	errs := &errorCount{}
	g := New(rules, LocalServers("every"), WithFlows(flows))
	p := &Pipeline{Gate: g, Ledger: l, Log: slog.New(errs),
		Limits:  config.Limits{ResultBytes: 1 << 20, ApprovalWait: time.Minute, PendingApprovals: 10, GrantTTL: time.Minute},
		Secrets: secrets.NewRedactor(nil, secrets.Options{Found: true, RedactFound: true})}
	// The limits are the product's kinds, set high enough that the same
	// call can be made b.N times (the defaults stop it, by design).
	sess := g.NewSession(config.Limits{CallsPerSession: 1 << 40, CallsPerToolPerMinute: 1 << 40, IdenticalCallRepeats: 1 << 40, ConsecutiveDenials: 3}, nil)
	shown := pin.Tool{Name: "echo", Raw: json.RawMessage(`{"name":"echo","inputSchema":{"type":"object"}}`)}
	p.Shown = &Shown{}
	p.Shown.Set(&View{Exposed: map[string]ExposedTool{"every__echo": {Name: "every__echo", Server: "every", Tool: shown}}})
	pinDigest := shown.Digest()
	var pending atomic.Int64
	tmpl := Request{Kind: KindTool, Session: sess, SessionID: s.ID(), Scope: "session:" + s.ID(),
		Server: "every", Name: "echo", Exposed: "every__echo", PinDigest: pinDigest,
		Schema: schema, Args: []byte(`{"message":"m123"}`), Pending: &pending}
	fwd := ForwardFunc(func(context.Context, int64, func(json.RawMessage, error)) (json.RawMessage, error) {
		return json.RawMessage(stageResult), nil
	})
	return &stageBench{l: l, p: p, tmpl: tmpl, errs: errs, fwd: fwd}
}

// request is the host's request, built afresh for each call as the
// proxy's handler builds it.
func (sb *stageBench) request() *Request {
	r := sb.tmpl
	return &r
}

// allowed decides one request, outside the timer, for the stages after
// the decision.
func (sb *stageBench) allowed(b *testing.B) (*Request, Decision, ledger.CallStart) {
	b.Helper()
	r := sb.request()
	d := sb.p.decided(context.Background(), r)
	if d.Outcome != Allow {
		b.Fatalf("decided %v: %s", d.Outcome, d.Reason)
	}
	return r, d, sb.p.callStart(r, &d)
}

// settle waits until every outcome queued before it is committed (a Write
// commits after the lazy writes ahead of it in the queue), then fails b if
// any call is still started or the pipeline logged an error or warning.
func (sb *stageBench) settle(b *testing.B) {
	b.Helper()
	ctx := context.Background()
	if err := sb.l.Write(ctx, func(*ledger.Tx) error { return nil }); err != nil {
		b.Fatal(err)
	}
	if cs, err := sb.l.Calls(ctx, ledger.CallFilter{State: ledger.StateStarted, Limit: 1}); err != nil || len(cs) > 0 {
		b.Fatalf("a call has no outcome after the benchmark: %v %v", cs, err)
	}
	if n, first := sb.errs.get(); n > 0 {
		b.Fatalf("the pipeline logged %d errors or warnings, the first: %s", n, first)
	}
}

// timed runs loop (b.N calls) between ResetTimer and the CPU report, then
// settles the ledger: its commits are the stage's work, so they are
// counted.
func (sb *stageBench) timed(b *testing.B, loop func()) {
	b.ReportAllocs()
	b.ResetTimer()
	cpu := benchcpu.Start()
	loop()
	sb.settle(b)
	cpu.Report(b)
}

// stageBenchmarks are BenchmarkStages' sub-benchmarks, in pipeline order.
var stageBenchmarks = []struct {
	name string
	f    func(*testing.B)
}{
	{"decide", benchDecide},
	{"record", benchRecord},
	{"forward", benchForward},
	{"run", benchRun},
}

// BenchmarkStages times each stage of one allowed tools/call, and the
// whole Run.
func BenchmarkStages(b *testing.B) {
	for _, s := range stageBenchmarks {
		b.Run(s.name, s.f)
	}
}

// BenchmarkStages8 is Run with 8 callers at once (one host session), the
// ledger grouping their commits.
func BenchmarkStages8(b *testing.B) {
	b.Run("run", benchRun8)
}

// benchDecide is what Run does before it records: the exposure check,
// then decided (secrets, rules and the pinned schema, flows, the
// session's limits, L7) and what the commit would record.
func benchDecide(b *testing.B) {
	ctx := context.Background()
	sb := newStageBench(b)
	sb.timed(b, func() {
		for range b.N {
			r := sb.request()
			if !sb.p.current(ctx, r) {
				b.Fatal("withdrawn")
			}
			d := sb.p.decided(ctx, r)
			if d.Outcome != Allow {
				b.Fatalf("decided %v: %s", d.Outcome, d.Reason)
			}
			if start := sb.p.callStart(r, &d); start.Decision != "allow" {
				b.Fatalf("would record %q", start.Decision)
			}
		}
	})
}

// benchRecord is the decision's durable record, then its outcome queued
// lazily (it commits with the next record), as Run and forward make them.
func benchRecord(b *testing.B) {
	ctx := context.Background()
	sb := newStageBench(b)
	_, _, start := sb.allowed(b)
	o := OutcomeOf(json.RawMessage(stageResult), nil, time.Millisecond, "")
	sb.timed(b, func() {
		for range b.N {
			id, err := sb.p.commit(ctx, start)
			if err != nil || id == 0 {
				b.Fatalf("not recorded: %d %v", id, err)
			}
			sb.p.recordLazy(id, o)
		}
	})
}

// benchForward is forward on a recorded call: the forwarder answers at
// once, the answer passes the outcome stage and its outcome is queued.
// The calls are recorded before the timer (and the CPU meter) starts.
func benchForward(b *testing.B) {
	ctx := context.Background()
	sb := newStageBench(b)
	r, d, start := sb.allowed(b)
	ids := recordMany(b, sb.l, start, b.N)
	sb.timed(b, func() {
		for _, id := range ids {
			if res := sb.p.forward(ctx, r, sb.fwd, id, d); res.Status != Done {
				b.Fatalf("status %v: %s %v", res.Status, res.Message, res.Err)
			}
		}
	})
}

// benchRun is the whole Run of one call after another.
func benchRun(b *testing.B) {
	ctx := context.Background()
	sb := newStageBench(b)
	sb.timed(b, func() {
		for range b.N {
			if res := sb.p.Run(ctx, sb.request(), sb.fwd); res.Status != Done {
				b.Fatalf("status %v: %s %v", res.Status, res.Message, res.Err)
			}
		}
	})
}

// benchRun8 is Run from 8 goroutines at once, b.N calls in all.
func benchRun8(b *testing.B) {
	const callers = 8
	ctx := context.Background()
	sb := newStageBench(b)
	sb.timed(b, func() {
		benchcpu.Concurrent(b, callers, func() error {
			if res := sb.p.Run(ctx, sb.request(), sb.fwd); res.Status != Done {
				return fmt.Errorf("status %v: %s %v", res.Status, res.Message, res.Err)
			}
			return nil
		})
		if b.Failed() {
			b.FailNow()
		}
	})
}

// recordMany records n calls of start, outside the timer: 64 callers, so
// the ledger groups them into few commits.
func recordMany(b *testing.B, l *ledger.Ledger, start ledger.CallStart, n int) []int64 {
	b.Helper()
	ids := make([]int64, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1) - 1; i < int64(n); i = next.Add(1) - 1 {
				id, err := l.RecordCall(context.Background(), start)
				if err != nil {
					b.Error(err)
					return
				}
				ids[i] = id
			}
		}()
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
	return ids
}

// errorCount is a log handler that counts the pipeline's warnings and
// errors (an outcome not recorded is only logged) and discards the rest.
type errorCount struct {
	mu    sync.Mutex
	n     int
	first string
}

func (e *errorCount) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }

func (e *errorCount) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Message)
	r.Attrs(func(a slog.Attr) bool {
		b.WriteString(" " + a.String())
		return true
	})
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.n == 0 {
		e.first = b.String()
	}
	e.n++
	return nil
}

func (e *errorCount) WithAttrs([]slog.Attr) slog.Handler { return e }
func (e *errorCount) WithGroup(string) slog.Handler      { return e }

func (e *errorCount) get() (int, string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.n, e.first
}

// TestStageBenchmarksRun runs each stage benchmark once (-benchtime 1x),
// so `go test` notices when the harness breaks: a refusal fails it
// instead of being measured.
func TestStageBenchmarksRun(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	bt := flag.Lookup("test.benchtime")
	old := bt.Value.String()
	if err := bt.Value.Set("1x"); err != nil {
		t.Fatal(err)
	}
	defer bt.Value.Set(old)
	type stage struct {
		name string // the benchmark's name in -bench
		f    func(*testing.B)
	}
	var all []stage
	for _, s := range stageBenchmarks {
		all = append(all, stage{"BenchmarkStages/" + s.name, s.f})
	}
	all = append(all, stage{"BenchmarkStages8/run", benchRun8})
	for _, s := range all {
		// testing.Benchmark discards the benchmark's own messages.
		if res := testing.Benchmark(s.f); res.N != 1 {
			t.Errorf("%s failed; see why: go test ./gate -run '^$' -bench '^%s$' -benchtime 1x", s.name, s.name)
		}
	}
}
