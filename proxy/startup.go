package proxy

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mcp-guard/mcp-guard/gate"
	up "github.com/mcp-guard/mcp-guard/upstream"
)

// defaultStartupWait is how long New waits for upstreams when Options
// does not say.
const defaultStartupWait = 5 * time.Second

// startAll starts and lists every upstream, each on its own, so that one
// that stalls holds up no other. ctx bounds them (Close also stops them).
// Each upstream has a Supervisor (package upstream) for its life; Serve
// runs them (supervise).
func (p *Proxy) startAll(ctx context.Context) {
	sctx, cancel := context.WithCancel(ctx)
	p.stopStarters = cancel
	p.firstDone = make(map[string]chan struct{}, len(p.opts.Upstreams))
	p.sups = make(map[string]*up.Supervisor[*upstream], len(p.opts.Upstreams))
	for _, spec := range p.opts.Upstreams {
		p.order = append(p.order, spec.Name)
		done := make(chan struct{})
		p.firstDone[spec.Name] = done
		s := p.supervisor(spec)
		p.sups[spec.Name] = s
		p.starters.Add(1)
		go func() {
			defer p.starters.Done()
			defer close(done)
			s.Start(sctx)
		}()
	}
}

// supervisor is the Supervisor of one upstream: what a connection means
// to the proxy (listed, pinned, shown; withdrawn when it ends or can no
// longer be listed).
func (p *Proxy) supervisor(spec up.Spec) *up.Supervisor[*upstream] {
	return &up.Supervisor[*upstream]{
		Backoff: up.BackoffOf(p.opts.Limits),
		Connect: func(ctx context.Context) (*upstream, error) {
			return startUpstream(ctx, p, spec, p.opts.Limits, p.opts.LogDir, p.opts.Version, p.log)
		},
		Ready:   p.ready,
		Failed:  func(f up.Failure) { p.noteFailure(spec.Name, f) },
		Ended:   p.ended,
		Changed: p.changed,
	}
}

// noteFailure records and logs one failure of an upstream, with when it
// is tried next.
func (p *Proxy) noteFailure(name string, f up.Failure) {
	p.setFailed(name, f.Err)
	next := time.Now().Add(f.RetryIn).Format(time.TimeOnly)
	if f.First {
		p.log.Error("upstream not ready; trying again later", "server", name, "err", f.Err, "in", f.RetryIn.Round(time.Millisecond), "at", next)
		return
	}
	p.log.Warn("upstream failed; trying again later", "server", name, "err", f.Err, "failures_in_a_row", f.InARow, "in", f.RetryIn.Round(time.Millisecond), "at", next)
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

// errClosed refuses a connection made while the proxy closes.
var errClosed = errors.New("proxy: closed")

// ready takes a new connection to an upstream into use: it is listed (its
// tools checked against their pins) and, once New has shown its first
// view, the view is refreshed. When the listing fails (an error, or no
// answer within Limits.StartTimeout), the upstream stays failed; its
// Supervisor closes it and starts it again.
func (p *Proxy) ready(ctx context.Context, u *upstream, first bool) error {
	p.mu.Lock()
	if p.closed || ctx.Err() != nil {
		p.mu.Unlock()
		return errClosed
	}
	p.ups[u.name] = u
	p.mu.Unlock()
	p.recordStart(ctx, u)
	if !first {
		p.log.Info("upstream connected again; checking its tools against their pins", "server", u.name)
	}
	if err := p.relist(ctx, u); err != nil {
		p.mu.Lock()
		if p.ups[u.name] == u {
			delete(p.ups, u.name)
		}
		p.mu.Unlock()
		return err
	}
	if first {
		p.mu.RLock()
		shown := p.shown
		p.mu.RUnlock()
		if !shown {
			return nil // New's first view includes it
		}
		p.log.Info("upstream ready after startup; adding its tools", "server", u.name)
		if string(u.Instructions()) != `""` && p.hostInited.Load() {
			p.log.Warn("upstream ready after a host started its session: its instructions cannot reach that host", "server", u.name)
		}
	}
	if err := p.refresh(ctx); err != nil && ctx.Err() == nil {
		p.log.Error("tool list not refreshed", "err", err)
	}
	return nil
}

// recordStart records in the ledger how the connection to u was made: its
// process and the sandbox that confines it (nothing in a dry run).
func (p *Proxy) recordStart(ctx context.Context, u *upstream) {
	if p.opts.DryRun {
		return
	}
	st := u.Started()
	err := gate.RecordUpstreamStart(ctx, p.opts.Ledger, p.opts.Lease.ID(), gate.UpstreamStarted{Server: u.name, Transport: st.Transport, PID: st.PID,
		Sandbox: st.Sandbox, LandlockABI: st.LandlockABI, NotEnforced: st.NotEnforced})
	if err != nil {
		p.log.Error("upstream start not recorded", "server", u.name, "err", err)
	}
}

// ended withdraws the tools of an upstream whose connection ended on its
// own, at once; its Supervisor starts it again.
func (p *Proxy) ended(ctx context.Context, u *upstream) {
	p.log.Warn("upstream ended; its tools are withdrawn until it is back", "server", u.name, "reason", u.Err())
	p.withdraw(ctx, u, u.Err())
}

// withdraw takes u out of use: its tools leave the view, and err is why
// the server failed.
func (p *Proxy) withdraw(ctx context.Context, u *upstream, err error) {
	p.mu.Lock()
	if p.ups[u.name] == u {
		delete(p.ups, u.name)
	}
	delete(p.live, u.name)
	p.failed[u.name] = err
	p.mu.Unlock()
	if err := p.refresh(ctx); err != nil && ctx.Err() == nil {
		p.log.Error("tool list not refreshed", "err", err)
	}
}

// changed lists an upstream again when it says its lists changed (its
// Supervisor paces how often); only tools whose pins still match stay
// exposed. A tools listing that fails withdraws the upstream and reports
// the error: its Supervisor closes it and starts it again after a wait.
func (p *Proxy) changed(ctx context.Context, u *upstream) error {
	p.log.Info("upstream says its lists changed; listing them again", "server", u.name)
	if err := p.relist(ctx, u); err != nil {
		p.withdraw(ctx, u, err)
		return err
	}
	if err := p.refresh(ctx); err != nil && ctx.Err() == nil {
		p.log.Error("tool list not refreshed", "err", err)
	}
	return nil
}

// hostInstructions is what a host starting its session is told, and
// notes that a host was told.
func (p *Proxy) hostInstructions() string {
	p.hostInited.Store(true)
	p.mu.RLock()
	defer p.mu.RUnlock()
	notes := signInNotes(p.order, p.failed)
	if p.view.Instructions == "" {
		return strings.TrimPrefix(notes, "\n\n")
	}
	return p.view.Instructions + notes
}

// signInNotes tells a host which servers are unavailable until the
// operator signs in to them, and the command that does: one line each,
// after the servers' own instructions.
func signInNotes(order []string, failed map[string]error) string {
	var b strings.Builder
	for _, name := range order {
		var se *up.SignInError
		if errors.As(failed[name], &se) {
			fmt.Fprintf(&b, "\n\nmcp-guard: server %s is unavailable until the operator signs in to it (mcp-guard auth %s).", name, name)
		}
	}
	return b.String()
}
