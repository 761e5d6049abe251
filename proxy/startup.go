package proxy

import (
	"context"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// defaultStartupWait is how long New waits for upstreams when Options
// does not say.
const defaultStartupWait = 5 * time.Second

// startAll starts and lists every upstream, each on its own, so that one
// that stalls holds up no other. ctx bounds them (Close also stops them).
func (p *Proxy) startAll(ctx context.Context) {
	sctx, cancel := context.WithCancel(ctx)
	p.stopStarters = cancel
	p.firstDone = make(map[string]chan struct{}, len(p.opts.Upstreams))
	for _, spec := range p.opts.Upstreams {
		p.order = append(p.order, spec.Name)
		done := make(chan struct{})
		p.firstDone[spec.Name] = done
		p.starters.Add(1)
		go func() {
			defer p.starters.Done()
			defer close(done)
			p.startFirst(sctx, spec)
		}()
	}
}

// awaitStartup waits until every upstream's first start has ended, or
// StartupWait has passed (WaitAll: no bound but the upstreams' own
// timeouts). Upstreams still starting are logged; each joins the view when
// it is ready.
func (p *Proxy) awaitStartup(ctx context.Context) {
	wait := p.opts.StartupWait
	if wait <= 0 {
		wait = defaultStartupWait
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	expired := timer.C
	if p.opts.WaitAll {
		expired = nil
	}
wait:
	for _, name := range p.order {
		select {
		case <-p.firstDone[name]:
		case <-ctx.Done():
			break wait
		case <-expired:
			break wait
		}
	}
	var late []string
	for _, name := range p.order {
		select {
		case <-p.firstDone[name]:
		default:
			late = append(late, name)
		}
	}
	p.mu.Lock()
	p.shown = true // from now on, each upstream that gets ready refreshes the view
	p.mu.Unlock()
	for _, name := range late {
		p.log.Warn("upstream not ready within startup_wait; serving the others, its tools will appear when it is ready", "server", name, "startup_wait", wait)
	}
}

// startFirst is one upstream's first start and listing. When it fails, the
// upstream is reported failed; supervise starts it again with backoff.
func (p *Proxy) startFirst(ctx context.Context, spec UpstreamSpec) {
	u, err := startUpstream(ctx, p, spec, p.opts.Limits, p.opts.LogDir, p.opts.Version, p.log)
	if err != nil {
		p.setFailed(spec.Name, err)
		p.log.Error("upstream not started", "server", spec.Name, "err", err)
		return
	}
	p.mu.Lock()
	if p.closed || ctx.Err() != nil {
		p.mu.Unlock()
		u.Close()
		return
	}
	p.ups[spec.Name] = u
	p.mu.Unlock()
	if p.listFirst(ctx, u) != nil {
		return
	}
	p.mu.RLock()
	shown := p.shown
	p.mu.RUnlock()
	if !shown {
		return // New's first view includes it
	}
	p.log.Info("upstream ready after startup; adding its tools", "server", spec.Name)
	if string(u.Instructions()) != `""` && p.hostInited.Load() {
		p.log.Warn("upstream ready after a host started its session: its instructions cannot reach that host", "server", spec.Name)
	}
	if err := p.refresh(ctx); err != nil && ctx.Err() == nil {
		p.log.Error("tool list not refreshed", "err", err)
	}
}

// listFirst lists a freshly started upstream. When that fails (an error,
// or no answer within Limits.StartTimeout), the upstream is stopped and
// stays failed until supervise starts it again.
func (p *Proxy) listFirst(ctx context.Context, u *upstream) error {
	err := p.relist(ctx, u)
	if err == nil {
		return nil
	}
	p.mu.Lock()
	if p.ups[u.name] == u {
		delete(p.ups, u.name)
	}
	p.mu.Unlock()
	u.Close()
	return err
}

// onInitialize completes the host's initialize result with the
// instructions of the servers ready now whose instructions are pinned
// as they are.
func (p *Proxy) onInitialize(_ context.Context, _ any, _ *mcp.InitializeRequest, r *mcp.InitializeResult) {
	r.Instructions = p.hostInstructions()
}

// onDiscover is onInitialize for a host speaking the stateless protocol
// (server/discover).
func (p *Proxy) onDiscover(_ context.Context, _ any, _ *mcp.DiscoverRequest, r *mcp.DiscoverResult) {
	r.Instructions = p.hostInstructions()
}

// hostInstructions is what a host starting its session is told, and
// notes that a host was told.
func (p *Proxy) hostInstructions() string {
	p.hostInited.Store(true)
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.view.instructions
}
