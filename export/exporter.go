package export

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Options configure an Exporter.
type Options struct {
	// Endpoint is the collector's OTLP/HTTP base URL
	// (http://127.0.0.1:4318); records go to /v1/logs, spans to /v1/traces.
	Endpoint string
	// Headers are sent with every request (a collector's API key). They
	// are secrets: never logged, never in an error.
	Headers map[string]string
	// IncludeArguments exports the arguments' bytes
	// (gen_ai.tool.call.arguments); off, they never leave the ledger.
	IncludeArguments bool
	Version          string // service.version
	// Identity gives the ledger's identity (the hash of event 1), "" while
	// it has no event: it keys the trace IDs, so one call's records share
	// a trace across processes.
	Identity func(ctx context.Context) string
	// Lookup, when set, gives the seq and hash of a call's first (decision)
	// or last (outcome) ledger event; the exporter asks it off the host's
	// path, just before sending.
	Lookup func(ctx context.Context, id int64, last bool) (seq int64, hash string, ok bool, err error)
	Log    *slog.Logger // nil: discarded

	// Zero values take the defaults below.
	QueueEvents int           // events held at most (4096)
	QueueBytes  int           // argument bytes held at most (8 MiB)
	Batch       int           // events per request (256)
	FlushEvery  time.Duration // longest an event waits to be sent (1s)
	Attempts    int           // tries per batch before it counts as failed (4)
	Backoff     time.Duration // first wait between tries, doubled each time (250ms)
	Timeout     time.Duration // one request (5s)
	Client      *http.Client
}

// Defaults.
const (
	defaultQueueEvents = 4096
	defaultQueueBytes  = 8 << 20
	defaultBatch       = 256
	defaultFlushEvery  = time.Second
	defaultAttempts    = 4
	defaultBackoff     = 250 * time.Millisecond
	defaultTimeout     = 5 * time.Second
	maxArgBytes        = 64 << 10 // arguments beyond this are cut (mcp_guard.arguments.truncated)
	logEvery           = time.Minute
)

// Stats count events: exported (the collector accepted them), dropped (the
// queue was full, so the oldest went, or serve stopped before they were
// sent) and failed (the collector refused them or could not be reached
// after every try).
type Stats struct {
	Exported int64  `json:"exported"`
	Dropped  int64  `json:"dropped"`
	Failed   int64  `json:"failed"`
	Queued   int64  `json:"queued"`
	LastErr  string `json:"last_error,omitempty"`
}

// An Exporter sends events to a collector from a goroutine of its own
// (Run). Add never blocks: when the queue is full the oldest event is
// dropped (and counted), so the newest activity is what reaches the
// collector after an outage.
type Exporter struct {
	opts     Options
	log      *slog.Logger
	resource []attr

	mu      sync.Mutex
	queue   []Event // ring: queue[head], ..., len n
	head, n int
	bytes   int
	wake    chan struct{}

	exported, dropped, failed atomic.Int64
	lastErr                   atomic.Pointer[string]
	failingSince              time.Time // worker only
	identity                  string    // worker only
	lastLog                   time.Time // worker only
}

// New returns an exporter to opts.Endpoint; nothing is sent before Run.
func New(opts Options) (*Exporter, error) {
	if !strings.HasPrefix(opts.Endpoint, "http://") && !strings.HasPrefix(opts.Endpoint, "https://") {
		return nil, fmt.Errorf("otlp: endpoint %q: want an http:// or https:// URL", opts.Endpoint)
	}
	opts.Endpoint = strings.TrimRight(opts.Endpoint, "/")
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	defd := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&opts.QueueEvents, defaultQueueEvents)
	def(&opts.QueueBytes, defaultQueueBytes)
	def(&opts.Batch, defaultBatch)
	def(&opts.Attempts, defaultAttempts)
	defd(&opts.FlushEvery, defaultFlushEvery)
	defd(&opts.Backoff, defaultBackoff)
	defd(&opts.Timeout, defaultTimeout)
	if opts.Client == nil {
		opts.Client = &http.Client{Timeout: opts.Timeout}
	}
	log := opts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	host, _ := os.Hostname()
	res := []attr{str("service.name", "mcp-guard"), str("service.version", opts.Version), num("process.pid", int64(os.Getpid()))}
	if host != "" {
		res = append(res, str("host.name", host))
	}
	return &Exporter{opts: opts, log: log, resource: res, queue: make([]Event, min(64, opts.QueueEvents)), wake: make(chan struct{}, 1)}, nil
}

// Endpoint is the collector's URL, as configured.
func (x *Exporter) Endpoint() string { return x.opts.Endpoint }

// IncludeArguments reports include_arguments.
func (x *Exporter) IncludeArguments() bool { return x.opts.IncludeArguments }

func eventBytes(e Event) int { return 512 + len(e.Args) + len(e.Reason) + len(e.Err) }

// Add queues e for export and returns at once. The arguments are dropped
// unless include_arguments is set, and cut to 64 KiB when it is.
func (x *Exporter) Add(e Event) {
	if !x.opts.IncludeArguments {
		e.Args = nil
	} else if len(e.Args) > maxArgBytes {
		e.Args = append(e.Args[:maxArgBytes:maxArgBytes], "…(truncated)"...)
	}
	size := eventBytes(e)
	x.mu.Lock()
	if x.n == len(x.queue) && len(x.queue) < x.opts.QueueEvents {
		x.growLocked()
	}
	for x.n > 0 && (x.n == len(x.queue) || x.bytes+size > x.opts.QueueBytes) {
		x.popLocked()
		x.dropped.Add(1)
	}
	x.queue[(x.head+x.n)%len(x.queue)] = e
	x.n++
	x.bytes += size
	x.mu.Unlock()
	select {
	case x.wake <- struct{}{}:
	default:
	}
}

// growLocked doubles the ring, up to QueueEvents: an idle exporter holds
// little memory.
func (x *Exporter) growLocked() {
	q := make([]Event, min(2*len(x.queue), x.opts.QueueEvents))
	for i := range x.n {
		q[i] = x.queue[(x.head+i)%len(x.queue)]
	}
	x.queue, x.head = q, 0
}

func (x *Exporter) popLocked() Event {
	e := x.queue[x.head]
	x.queue[x.head] = Event{}
	x.head = (x.head + 1) % len(x.queue)
	x.n--
	x.bytes -= eventBytes(e)
	return e
}

// take removes up to Batch events from the queue.
func (x *Exporter) take() []Event {
	x.mu.Lock()
	defer x.mu.Unlock()
	n := min(x.n, x.opts.Batch)
	out := make([]Event, n)
	for i := range out {
		out[i] = x.popLocked()
	}
	return out
}

// Stats are the counts so far.
func (x *Exporter) Stats() Stats {
	x.mu.Lock()
	q := int64(x.n)
	x.mu.Unlock()
	s := Stats{Exported: x.exported.Load(), Dropped: x.dropped.Load(), Failed: x.failed.Load(), Queued: q}
	if p := x.lastErr.Load(); p != nil {
		s.LastErr = *p
	}
	return s
}

// Run sends queued events until ctx ends, then sends what is left within
// grace (events still queued after it are counted as dropped). It runs on
// a goroutine of its own.
func (x *Exporter) Run(ctx context.Context, grace time.Duration) {
	t := time.NewTicker(x.opts.FlushEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			x.drain(grace)
			return
		case <-t.C:
		case <-x.wake:
			// Send when a batch is full, else at the next tick: requests
			// carry many events, and a busy host costs one request a
			// second, not one per call.
			x.mu.Lock()
			full := x.n >= x.opts.Batch
			x.mu.Unlock()
			if !full {
				continue
			}
		}
		for {
			batch := x.take()
			if len(batch) == 0 {
				break
			}
			x.send(ctx, batch)
			if ctx.Err() != nil {
				break
			}
		}
	}
}

// drain sends what is queued, once each, within grace; the rest is
// dropped.
func (x *Exporter) drain(grace time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	for ctx.Err() == nil {
		batch := x.take()
		if len(batch) == 0 {
			return
		}
		x.send(ctx, batch)
	}
	x.mu.Lock()
	for x.n > 0 {
		x.popLocked()
		x.dropped.Add(1)
	}
	x.mu.Unlock()
}

// send exports one batch as log records and spans, retrying with backoff,
// and counts the outcome.
func (x *Exporter) send(ctx context.Context, batch []Event) {
	if x.identity == "" && x.opts.Identity != nil {
		x.identity = x.opts.Identity(ctx)
	}
	recs := make([]logRecord, 0, len(batch))
	spans := make([]span, 0, len(batch))
	for _, e := range batch {
		if e.What != EventHead && x.opts.Lookup != nil && e.CallID > 0 && e.Hash == "" {
			seq, hash, ok, err := x.opts.Lookup(ctx, e.CallID, e.What == EventOutcome || e.Decision == "approved")
			if err == nil && ok {
				e.Seq, e.Hash = seq, hash
			}
		}
		r, s := e.records(x.identity)
		if len(e.Args) > maxArgBytes {
			r.attrs = append(r.attrs, flag("mcp_guard.arguments.truncated", true))
		}
		recs = append(recs, r)
		if s.spanID != nil {
			spans = append(spans, s)
		}
	}
	err := x.post(ctx, "/v1/logs", encodeLogs(x.resource, x.opts.Version, recs))
	if err == nil && len(spans) > 0 {
		err = x.post(ctx, "/v1/traces", encodeSpans(x.resource, x.opts.Version, spans))
	}
	x.count(int64(len(batch)), err)
}

// count records a batch's outcome and tells the operator, at most once a
// minute while the collector fails, and once when it is back.
func (x *Exporter) count(n int64, err error) {
	now := time.Now()
	if err == nil {
		x.exported.Add(n)
		if !x.failingSince.IsZero() {
			x.log.Info("otlp export: the collector takes records again", "endpoint", x.opts.Endpoint, "failing_for", now.Sub(x.failingSince).Round(time.Second).String(), "exported", x.exported.Load(), "dropped", x.dropped.Load(), "failed", x.failed.Load())
			x.failingSince = time.Time{}
		}
		return
	}
	x.failed.Add(n)
	msg := err.Error()
	x.lastErr.Store(&msg)
	if x.failingSince.IsZero() {
		x.failingSince = now
	}
	if now.Sub(x.lastLog) >= logEvery {
		x.lastLog = now
		x.log.Warn("otlp export failing: calls go on, records are not reaching the collector", "endpoint", x.opts.Endpoint, "err", msg, "exported", x.exported.Load(), "dropped", x.dropped.Load(), "failed", x.failed.Load())
	}
}

// errPermanent marks a response a retry cannot change.
var errPermanent = errors.New("refused")

// post sends body to path, trying up to Attempts times.
func (x *Exporter) post(ctx context.Context, path string, body []byte) error {
	wait := x.opts.Backoff
	var err error
	for try := 1; ; try++ {
		err = x.postOnce(ctx, path, body)
		if err == nil || errors.Is(err, errPermanent) || try >= x.opts.Attempts || ctx.Err() != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		wait = min(wait*2, 30*time.Second)
	}
}

func (x *Exporter) postOnce(ctx context.Context, path string, body []byte) error {
	ctx, cancel := context.WithTimeout(ctx, x.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, x.opts.Endpoint+path, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("otlp: %s: %w", path, errors.Join(errPermanent, err))
	}
	for k, v := range x.opts.Headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/x-protobuf")
	resp, err := x.opts.Client.Do(req)
	if err != nil {
		return fmt.Errorf("otlp: post %s: %w", path, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	switch {
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		return nil
	case resp.StatusCode == http.StatusTooManyRequests, resp.StatusCode == http.StatusBadGateway,
		resp.StatusCode == http.StatusServiceUnavailable, resp.StatusCode == http.StatusGatewayTimeout:
		return fmt.Errorf("otlp: post %s: collector answered %s (will retry)", path, resp.Status)
	}
	return fmt.Errorf("otlp: post %s: collector answered %s: %w", path, resp.Status, errPermanent)
}

// Probe sends an empty log export: it says whether the collector can be
// reached and takes OTLP/HTTP protobuf now.
func (x *Exporter) Probe(ctx context.Context) error {
	return x.postOnce(ctx, "/v1/logs", nil)
}

// Send exports one event now, once, waiting for the collector's answer
// (the otlp witness: a head counts as committed only when the collector
// took it). It does not touch the queue.
func (x *Exporter) Send(ctx context.Context, e Event) error {
	r, _ := e.records("")
	err := x.postOnce(ctx, "/v1/logs", encodeLogs(x.resource, x.opts.Version, []logRecord{r}))
	if err == nil {
		x.exported.Add(1)
	} else {
		x.failed.Add(1)
		msg := err.Error()
		x.lastErr.Store(&msg)
	}
	return err
}
