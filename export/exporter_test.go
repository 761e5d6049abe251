package export

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcp-guard/mcp-guard/ledger"
)

// collectorStub is a real HTTP server answering each request with the
// status code status returns; it counts requests and keeps the headers.
type collectorStub struct {
	*httptest.Server
	hits    atomic.Int64
	mu      sync.Mutex
	headers []http.Header
	bodies  [][]byte
}

func newStub(t *testing.T, status func(n int64) int) *collectorStub {
	s := &collectorStub{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := s.hits.Add(1)
		var b bytes.Buffer
		b.ReadFrom(r.Body)
		s.mu.Lock()
		s.headers = append(s.headers, r.Header.Clone())
		s.bodies = append(s.bodies, b.Bytes())
		s.mu.Unlock()
		w.WriteHeader(status(n))
	}))
	t.Cleanup(s.Close)
	return s
}

func newTest(t *testing.T, o Options) *Exporter {
	t.Helper()
	if o.Endpoint == "" {
		o.Endpoint = "http://127.0.0.1:1"
	}
	x, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return x
}

// A full queue drops its oldest events, counted; the newest are kept.
func TestExporter_DropsOldestWhenFull(t *testing.T) {
	x := newTest(t, Options{QueueEvents: 4, Batch: 10})
	for i := int64(1); i <= 6; i++ {
		x.Add(Event{What: EventDecision, CallID: i})
	}
	if s := x.Stats(); s.Dropped != 2 || s.Queued != 4 {
		t.Fatalf("stats %+v, want 2 dropped, 4 queued", s)
	}
	got := x.take()
	if len(got) != 4 || got[0].CallID != 3 || got[3].CallID != 6 {
		t.Fatalf("kept %+v, want calls 3 to 6", got)
	}
}

// The queue is bounded in bytes too: large arguments push old events out.
func TestExporter_QueueBytesBound(t *testing.T) {
	x := newTest(t, Options{IncludeArguments: true, QueueBytes: 200 << 10})
	big := bytes.Repeat([]byte("a"), 60<<10)
	for i := int64(1); i <= 10; i++ {
		x.Add(Event{What: EventDecision, CallID: i, Args: big})
	}
	x.mu.Lock()
	held := x.bytes
	x.mu.Unlock()
	if s := x.Stats(); s.Dropped == 0 || held > 200<<10 {
		t.Fatalf("stats %+v, %d bytes held: want drops and at most %d bytes", s, held, 200<<10)
	}
}

// Arguments are kept only with include_arguments (and then cut at 64 KiB).
func TestExporter_ArgsOnlyWithInclude(t *testing.T) {
	off := newTest(t, Options{})
	off.Add(Event{What: EventDecision, CallID: 1, Args: []byte(`{"q":"secret"}`)})
	if got := off.take(); len(got) != 1 || got[0].Args != nil {
		t.Fatalf("without include_arguments the queue holds %+v", got)
	}
	r, s := (Event{What: EventDecision, CallID: 1, Decision: "allow"}).records("L")
	for _, a := range append(r.attrs, s.attrs...) {
		if a.key == attrArgs {
			t.Fatalf("an event without arguments has %s", attrArgs)
		}
	}
	on := newTest(t, Options{IncludeArguments: true})
	on.Add(Event{What: EventDecision, CallID: 1, Args: []byte(`{"q":"secret"}`)})
	on.Add(Event{What: EventDecision, CallID: 2, Args: bytes.Repeat([]byte("a"), 100<<10)})
	got := on.take()
	if string(got[0].Args) != `{"q":"secret"}` || len(got[1].Args) > maxArgBytes+32 {
		t.Fatalf("with include_arguments: %q, %d bytes", got[0].Args, len(got[1].Args))
	}
}

// Add never waits, even with nothing draining the queue: in a synctest
// bubble, the adding goroutine finishes instead of blocking durably.
func TestExporter_AddNeverWaits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		x := newTest(t, Options{QueueEvents: 8})
		var done atomic.Bool
		go func() {
			for i := range int64(100) {
				x.Add(Event{What: EventDecision, CallID: i + 1})
			}
			done.Store(true)
		}()
		synctest.Wait()
		if !done.Load() {
			t.Error("Add blocked with no worker running")
			for !done.Load() { // unblock it, so the bubble can end
				<-x.wake
				synctest.Wait()
			}
		}
	})
}

// Add never waits for the collector: with one that never answers, adding
// many more events than the queue holds returns, and the excess is
// counted as dropped.
func TestExporter_AddNeverBlocks(t *testing.T) {
	release := make(chan struct{})
	hung := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-release }))
	defer hung.Close()
	defer close(release)
	x := newTest(t, Options{Endpoint: hung.URL, QueueEvents: 64, Batch: 8, FlushEvery: time.Millisecond, Timeout: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { x.Run(ctx, time.Millisecond); close(done) }()
	const n = 10000
	for i := range int64(n) {
		x.Add(Event{What: EventDecision, CallID: i + 1})
	}
	if s := x.Stats(); s.Dropped < n-64-8 {
		t.Fatalf("stats %+v: want at least %d dropped", s, n-64-8)
	}
	cancel()
	<-done
}

// A collector's temporary refusal (503) is retried; a permanent one (400)
// is not, and counts as failed.
func TestExporter_RetriesOnlyWhatCanChange(t *testing.T) {
	flaky := newStub(t, func(n int64) int {
		if n <= 2 {
			return http.StatusServiceUnavailable
		}
		return http.StatusOK
	})
	x := newTest(t, Options{Endpoint: flaky.URL, Backoff: time.Millisecond})
	x.send(context.Background(), []Event{{What: EventDecision, CallID: 1, Decision: "allow"}})
	if s := x.Stats(); s.Exported != 1 || s.Failed != 0 || flaky.hits.Load() != 4 {
		t.Fatalf("503, 503, then 200: stats %+v after %d requests; want exported after 4 (logs thrice, traces once)", s, flaky.hits.Load())
	}
	bad := newStub(t, func(int64) int { return http.StatusBadRequest })
	y := newTest(t, Options{Endpoint: bad.URL, Backoff: time.Millisecond})
	y.send(context.Background(), []Event{{What: EventDecision, CallID: 1, Decision: "allow"}})
	if s := y.Stats(); s.Failed != 1 || s.Exported != 0 || bad.hits.Load() != 1 {
		t.Fatalf("400: stats %+v after %d requests; want failed after 1", s, bad.hits.Load())
	}
}

// The collector's headers are sent with every request, and never appear
// in what the exporter logs or reports when the collector fails.
func TestExporter_HeadersSentNeverLogged(t *testing.T) {
	const secret = "sekret-api-key-value"
	refusing := newStub(t, func(int64) int { return http.StatusUnauthorized })
	var logs bytes.Buffer
	x := newTest(t, Options{Endpoint: refusing.URL, Headers: map[string]string{"X-Api-Key": secret},
		Log: slog.New(slog.NewTextHandler(&logs, nil))})
	x.send(context.Background(), []Event{{What: EventDecision, CallID: 1, Decision: "allow"}})
	refusing.mu.Lock()
	got := refusing.headers[0].Get("X-Api-Key")
	ct := refusing.headers[0].Get("Content-Type")
	refusing.mu.Unlock()
	if got != secret || ct != "application/x-protobuf" {
		t.Fatalf("the collector got X-Api-Key %q, Content-Type %q", got, ct)
	}
	if !strings.Contains(logs.String(), "otlp export failing") || strings.Contains(logs.String(), secret) || strings.Contains(x.Stats().LastErr, secret) {
		t.Fatalf("log or status shows the header (or says nothing):\n%s\n%+v", logs.String(), x.Stats())
	}
}

// The otlp witness takes a head only when the collector answered 2xx.
func TestWitness_TakenOnlyOn2xx(t *testing.T) {
	ok := newStub(t, func(int64) int { return http.StatusOK })
	w := NewWitness(newTest(t, Options{Endpoint: ok.URL}))
	h := ledger.Head{Ledger: strings.Repeat("a", 64), Seq: 7, Hash: strings.Repeat("b", 64), Why: "start", At: time.Now()}
	if err := w.Commit(context.Background(), h); err != nil {
		t.Fatalf("collector 200: %v", err)
	}
	ok.mu.Lock()
	body := ok.bodies[0]
	ok.mu.Unlock()
	if !bytes.Contains(body, []byte(h.Hash)) || !bytes.Contains(body, []byte("mcp_guard.ledger.head")) {
		t.Fatalf("the head record lacks the hash or its event name")
	}
	for _, code := range []int{http.StatusInternalServerError, http.StatusServiceUnavailable, http.StatusBadRequest} {
		refusing := newStub(t, func(int64) int { return code })
		w := NewWitness(newTest(t, Options{Endpoint: refusing.URL}))
		if err := w.Commit(context.Background(), h); err == nil {
			t.Fatalf("collector %d: the head counts as taken", code)
		}
	}
	if err := NewWitness(newTest(t, Options{})).Commit(context.Background(), h); err == nil {
		t.Fatalf("no collector: the head counts as taken")
	}
}

// The queue starts small and grows up to QueueEvents, keeping its order
// across the ring's wrap.
func TestExporter_QueueGrowsInOrder(t *testing.T) {
	x := newTest(t, Options{QueueEvents: 1000, Batch: 50})
	next := int64(1)
	add := func(n int) {
		for range n {
			x.Add(Event{What: EventDecision, CallID: next})
			next++
		}
	}
	add(60)
	if got := x.take(); len(got) != 50 || got[0].CallID != 1 {
		t.Fatalf("first batch %d events from %d", len(got), got[0].CallID)
	}
	add(200)
	want := int64(51)
	for b := x.take(); len(b) > 0; b = x.take() {
		for _, e := range b {
			if e.CallID != want {
				t.Fatalf("got call %d, want %d", e.CallID, want)
			}
			want++
		}
	}
	if want != next || x.Stats().Dropped != 0 {
		t.Fatalf("read up to %d of %d, %+v", want, next, x.Stats())
	}
}
