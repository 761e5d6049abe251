package proxy

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-guard/mcp-guard/config"
	"github.com/mcp-guard/mcp-guard/gate"
	"github.com/mcp-guard/mcp-guard/pin"
	"github.com/mcp-guard/mcp-guard/secrets"
	up "github.com/mcp-guard/mcp-guard/upstream"
)

// Options configure a Proxy.
type Options struct {
	Upstreams []up.Spec
	Gate      *gate.Gate
	Ledger    gate.Store    // every call is recorded here before it is forwarded
	Lease     gate.Lease    // this process's lease in the ledger
	PinTOFU   bool          // pin what a server lists at its first contact (later additions wait unless TrustNewTools)
	DryRun    bool          // list and report only: write no pins (mcp-guard tools)
	Limits    config.Limits // every limit: each upstream's, each host session's, what the pipeline holds
	LogDir    string        // per-server stderr logs go here
	Version   string        // mcp-guard's version, shown to hosts and upstreams
	PID       int           // recorded with each HTTP host's ledger session
	// Scope is the label scope of this process's lease, which the caller
	// joined (ledger JoinScope): the stdio host's. SharedScope says it was
	// named (serve --scope): then every HTTP host session shares it too;
	// otherwise each HTTP session is its own scope, "session:<ledger
	// session>". ScopeGrace is how long a scope's labels outlive its last
	// live process.
	Scope       string
	SharedScope bool
	ScopeGrace  time.Duration
	Log         *slog.Logger

	// StartupWait bounds how long New waits for the upstreams to start and
	// list (default 5s): the host's initialize is answered with those ready
	// by then, and each later one joins when it is ready.
	StartupWait time.Duration
	// Witness commits the ledger's chain head outside the file before an
	// exec or destructive call is forwarded (gate.Pipeline.Witness);
	// WitnessRequired refuses such a call when it fails.
	Witness         func(ctx context.Context, why string) error
	WitnessRequired bool
	// Waiting hears of each request held for the operator
	// (gate.Pipeline.Waiting): the desktop notification.
	Waiting func(gate.Waiting)
	// AskIn says where the tool calls a rule holds are asked about
	// (gate.Pipeline.AskIn): a host that can show a form is also asked.
	AskIn func(rule int) string
	// BareNames exposes the one upstream's tools and prompts under their
	// own names, not "<server>__<name>" (its [[server]] says namespace =
	// false). New refuses it with more than one upstream.
	BareNames bool

	// Secrets, when set, redacts every known secret and found credential
	// from what reaches the host (redact.go), refuses arguments that carry
	// a known secret, and labels a session secret when a result carries a
	// found credential (gate.Pipeline.Secrets).
	Secrets *secrets.Redactor

	// WaitAll makes New wait for every upstream to be listed or to fail,
	// each within Limits.StartTimeout per step (mcp-guard tools).
	WaitAll bool
}

// Proxy is mcp-guard between one host and its upstreams.
type Proxy struct {
	opts    Options
	log     *slog.Logger
	ups     map[string]*upstream // connected upstreams (under mu); their Supervisors replace them
	order   []string             // upstream names in config order
	schemas *pin.SchemaCache
	hosts   hosts
	pipe    *gate.Pipeline // every request's decision, record, hold and forward
	content contentState   // prompts and resources (content.go)
	cancels cancelBook     // host requests the host may cancel (cancel.go)
	posts   posts          // the HTTP host's requests in flight (httppost.go)
	inputs  inputStates    // requestStates issued to modern hosts (rounds.go)
	conns   hostConns      // the hosts connected, for what they are sent unasked (conns.go)
	lists   atomic.Uint64  // numbers the stateless HTTP host's lists and listens (httppost.go)
	// pinsSeen is the ledger's pins version the current view was computed
	// from (refresh): a pin decision after it is one the view lacks.
	pinsSeen atomic.Int64

	refreshMu   sync.Mutex // one refresh at a time
	supervisors sync.WaitGroup

	// Startup (startup.go): each upstream's first start and listing runs
	// on its own; firstDone[name] closes when it ended, either way.
	firstDone    map[string]chan struct{}
	sups         map[string]*up.Supervisor[*upstream] // each upstream's, for the proxy's life
	starters     sync.WaitGroup
	stopStarters context.CancelFunc
	hostInited   atomic.Bool // a host's initialize (or server/discover) was answered

	mu     sync.RWMutex
	live   map[string]listing // each upstream's latest listing
	failed map[string]error   // upstreams that did not start or list, and why
	view   *view              // what the host sees now, and the lists it is sent
	// exposed is view's gate.View, as the gate's exposure stage and each
	// lookup of a name the host uses read it (set with view, in refresh).
	exposed gate.Shown
	closed  bool // Close ran: no upstream may be added
	shown   bool // New showed its first view: later listings refresh it

	logMu    sync.Mutex
	logLevel mcp.LoggingLevel // the least severe level a host asked to receive ("" = all)
}

// listing is what one upstream said at its latest tools/list.
type listing struct {
	tools        []pin.Tool
	instructions []byte          // raw JSON string from initialize ("" when absent)
	dups         map[string]bool // names listed more than once: all refused
}

func newListing(tools []pin.Tool, instructions []byte) listing {
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.Name
	}
	return listing{tools: tools, instructions: instructions, dups: gate.Duplicates(names)}
}

// New starts every upstream, lists and pins their tools and decides which
// the host will see. Upstreams start and list concurrently; New waits for
// them at most Options.StartupWait (unless WaitAll), and each upstream ready
// later is added to the view when it is. An upstream that fails to start is
// reported and left out; the others are served.
func New(ctx context.Context, opts Options) (*Proxy, error) {
	if opts.Gate == nil || opts.Ledger == nil || opts.Lease == nil {
		return nil, errors.New("proxy: a gate, a ledger and a session are required")
	}
	if err := opts.Limits.Check(); err != nil {
		return nil, fmt.Errorf("proxy: %w", err)
	}
	if opts.BareNames && len(opts.Upstreams) != 1 {
		return nil, fmt.Errorf("proxy: names without the server prefix (namespace = false) need exactly one upstream, not %d", len(opts.Upstreams))
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	p := &Proxy{
		opts:    opts,
		log:     opts.Log,
		ups:     map[string]*upstream{},
		schemas: pin.NewSchemaCache(pin.SchemaLimits{}, 1024),
		live:    map[string]listing{},
		failed:  map[string]error{},
		view:    &view{View: &gate.View{}},
	}
	p.pipe = &gate.Pipeline{Gate: opts.Gate, Ledger: opts.Ledger, Upstreams: servers{p}, Shown: &p.exposed, Log: opts.Log, Limits: opts.Limits, Witness: opts.Witness, WitnessRequired: opts.WitnessRequired, Waiting: opts.Waiting, Secrets: opts.Secrets, AskIn: opts.AskIn}
	p.hosts.stdio = &hostSession{gate: opts.Gate.NewSession(opts.Limits, nil), lease: opts.Lease, scope: opts.Scope}
	p.opts.Upstreams = slices.Clone(opts.Upstreams)

	p.startAll(ctx)
	p.awaitStartup(ctx)
	if err := p.refresh(ctx); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// relist walks an upstream's tools/list and records what it said: each
// valid tool and its instructions are observed in the ledger's pins. It
// returns why the tools could not be listed.
func (p *Proxy) relist(ctx context.Context, u *upstream) error {
	lctx, cancel := context.WithTimeout(ctx, p.opts.Limits.StartTimeout)
	tools, err := listTools(lctx, u)
	cancel()
	if err != nil && ctx.Err() == nil && errors.Is(err, context.DeadlineExceeded) {
		err = fmt.Errorf("server %q did not list its tools within %s (limits.start_timeout)", u.name, p.opts.Limits.StartTimeout)
	}
	if err != nil {
		p.mu.Lock()
		p.failed[u.name] = err
		delete(p.live, u.name)
		p.mu.Unlock()
		p.log.Error("upstream tools not listed; none of its tools are gate.ExposedTool", "server", u.name, "err", err)
		return err
	}
	l := newListing(tools, u.Instructions())
	trust := p.trustNew(ctx, u.name)
	p.observe(ctx, u.name, l, trust)
	p.mu.Lock()
	delete(p.failed, u.name)
	p.live[u.name] = l
	p.mu.Unlock()
	p.relistContent(ctx, u, trust) // its prompts and resources (content.go)
	return nil
}

// trustNew is gate.TrustNew for this listing of server, logged.
func (p *Proxy) trustNew(ctx context.Context, server string) string {
	trust, err := gate.TrustNew(ctx, p.opts.Ledger, server, p.opts.PinTOFU, p.spec(server).TrustNewTools)
	switch {
	case err != nil:
		p.log.Error("could not tell whether the server was listed before; what it lists new waits for the operator", "server", server, "err", err)
	case gate.FirstContact(trust):
		p.log.Info("first contact with the server: what it lists now is pinned (trust on first use)", "server", server)
	}
	return trust
}

// spec is the named upstream's configuration.
func (p *Proxy) spec(server string) up.Spec {
	for _, s := range p.opts.Upstreams {
		if s.Name == server {
			return s
		}
	}
	return up.Spec{}
}

// watch keeps the host's view current: it re-reads the pins when the ledger
// changes (an operator accepted or rejected a pin from another process), and
// resets the host sessions' limits on "mcp-guard reset". It returns when ctx
// ends.
func (p *Proxy) watch(ctx context.Context) {
	changed, err := p.opts.Ledger.Watch(ctx, 100*time.Millisecond)
	if err != nil {
		p.log.Error("not watching the ledger for pin decisions", "err", err)
	}
	lastReset, _ := p.opts.Ledger.ResetVersion(ctx)
	// A decision made before the watch began, after the view was computed,
	// gave no notice to wait for.
	p.refreshIfPinsChanged(ctx)
	for changed != nil {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-changed:
			if !ok {
				return
			}
			if v, err := p.opts.Ledger.ResetVersion(ctx); err == nil && v != lastReset {
				lastReset = v
				p.resetHosts()
				p.log.Warn("the operator reset the session's limits (mcp-guard reset)")
			}
			p.refreshIfPinsChanged(ctx)
		}
	}
}

// refreshIfPinsChanged computes the view again if a pin was decided since
// it was computed. Most commits are calls; only a pin decision changes the
// view.
func (p *Proxy) refreshIfPinsChanged(ctx context.Context) {
	v, err := p.opts.Ledger.PinsVersion(ctx)
	if err != nil || v == p.pinsSeen.Load() {
		return
	}
	if err := p.refresh(ctx); err != nil && ctx.Err() == nil {
		p.log.Error("tool list not refreshed", "err", err)
	}
}

// startSupervisors runs every upstream's Supervisor (startup.go) once its
// first start has ended: an upstream that ends or never came up is
// started again with backoff, and one that says its tools changed is
// listed again. They stop when ctx ends, and Close waits for them.
func (p *Proxy) startSupervisors(ctx context.Context) {
	for _, spec := range p.opts.Upstreams {
		p.supervisors.Add(1)
		go func() {
			defer p.supervisors.Done()
			select {
			case <-ctx.Done():
				return
			case <-p.firstDone[spec.Name]:
			}
			p.sups[spec.Name].Run(ctx)
		}()
	}
}

// upstream is the named upstream while it is connected, else nil.
func (p *Proxy) upstream(name string) *upstream {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.ups[name]
}

func (p *Proxy) setFailed(name string, err error) {
	p.mu.Lock()
	p.failed[name] = err
	p.mu.Unlock()
}

// Tools reports every tool the upstreams listed and what became of it.
func (p *Proxy) Tools() []gate.ToolReport {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.view.Report
}

// Failed reports the upstreams that did not start or list their tools.
func (p *Proxy) Failed() map[string]error {
	p.mu.RLock()
	defer p.mu.RUnlock()
	out := make(map[string]error, len(p.failed))
	for k, v := range p.failed {
		out[k] = v
	}
	return out
}

// Close stops every upstream and its process group. Serve must have
// returned (its supervisors stop with it).
func (p *Proxy) Close() {
	p.supervisors.Wait()
	p.stopStarters()
	p.starters.Wait()
	p.mu.Lock()
	p.closed = true
	ups := make([]*upstream, 0, len(p.ups))
	for _, u := range p.ups {
		ups = append(ups, u)
	}
	p.mu.Unlock()
	var wg sync.WaitGroup
	for _, u := range ups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			u.Close()
		}()
	}
	wg.Wait()
}
