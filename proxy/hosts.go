package proxy

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/mcp-guard/mcp-guard/gate"
)

// hostSession is one connected host's state: its limits (calls, rates,
// denials), its asks waiting for the operator, and the ledger session its
// calls are recorded under. The stdio host is one; each HTTP session is one.
type hostSession struct {
	gate    *gate.Session
	pending atomic.Int64
	lease   gate.Lease
	own     bool // the lease was started for this host and ends with it
	// scope is the label scope its requests read and add to (flows).
	scope string
}

// hosts maps host session IDs to their state.
type hosts struct {
	mu    sync.Mutex
	byID  map[string]*hostSession
	stdio *hostSession // the stdio host, and any request with no host connection
	// modern is the HTTP host of the stateless protocol (2026-07-28): the
	// bearer token's holder, across all its requests; made on first use.
	modern *hostSession
}

// modernHost is the one stateless HTTP host, with its own limits and
// ledger session from its first request on.
func (p *Proxy) modernHost(ctx context.Context) *hostSession {
	p.hosts.mu.Lock()
	defer p.hosts.mu.Unlock()
	if h := p.hosts.modern; h != nil {
		return h
	}
	h := &hostSession{gate: p.opts.Gate.NewSession(p.opts.Limits, nil), lease: p.opts.Lease, scope: p.opts.Scope}
	remote, _ := ctx.Value(remoteAddrKey).(string)
	lease, err := gate.StartHostSession(context.WithoutCancel(ctx), p.opts.Ledger, "http stateless "+remote, p.opts.PID)
	if err != nil {
		p.log.Error("stateless host session not recorded; its calls are recorded under the process's", "err", err)
	} else {
		h.lease, h.own = lease, true
		p.joinScope(ctx, h)
	}
	p.hosts.modern = h
	p.log.Info("stateless host (2026-07-28) connected", "remote", remote, "ledger_session", h.lease.ID())
	return h
}

// hostOf is the state of the host whose request ctx carries. An HTTP
// session not started yet (its initialize is being served) gets its own
// state under the process lease.
//
// A stateless host (protocol 2026-07-28) has no session of its own: over
// stdio it is the connection's host; over HTTP every such request is
// served by one host, the holder of the bearer token (the only one
// guardHTTP admits), whatever ephemeral session serves each request.
// So a host cannot shed its limits, its withdrawn approvals or its
// denials by sending each request as a new stateless session.
func (p *Proxy) hostOf(ctx context.Context) *hostSession {
	cs := connOf(ctx)
	if cs == nil || p.hosts.byID == nil {
		return p.hosts.stdio
	}
	if modernHost(ctx) {
		return p.modernHost(ctx)
	}
	p.hosts.mu.Lock()
	defer p.hosts.mu.Unlock()
	if h, ok := p.hosts.byID[cs.connID()]; ok {
		return h
	}
	if cs.connID() == "stdio" {
		return p.hosts.stdio
	}
	h := &hostSession{gate: p.opts.Gate.NewSession(p.opts.Limits, nil), lease: p.opts.Lease, scope: p.opts.Scope}
	p.hosts.byID[cs.connID()] = h
	return h
}

// addHost gives a new HTTP session its own limits and ledger session, and
// its label scope: the named one (serve --scope) or its own. (The stateless
// HTTP host gets the same from modernHost.)
func (p *Proxy) addHost(ctx context.Context, id, remote string) {
	h := &hostSession{gate: p.opts.Gate.NewSession(p.opts.Limits, nil), lease: p.opts.Lease, scope: p.opts.Scope}
	lease, err := gate.StartHostSession(context.WithoutCancel(ctx), p.opts.Ledger, "http "+remote, p.opts.PID)
	if err != nil {
		p.log.Error("host session not recorded; its calls are recorded under the process's", "err", err)
	} else {
		h.lease, h.own = lease, true
		p.joinScope(ctx, h)
	}
	p.hosts.mu.Lock()
	p.hosts.byID[id] = h
	p.hosts.mu.Unlock()
	p.log.Info("host connected", "session", id, "remote", remote, "ledger_session", h.lease.ID())
}

// joinScope puts a host with its own ledger session in its label scope: the
// named one (serve --scope) or one of its own, "session:<its ledger
// session>". If that cannot be recorded it keeps the process's scope: the
// labels it gains are still recorded and still checked.
func (p *Proxy) joinScope(ctx context.Context, h *hostSession) {
	scope := p.opts.Scope
	if !p.opts.SharedScope {
		scope = "session:" + h.lease.ID()
	}
	ended, err := p.opts.Ledger.JoinScope(context.WithoutCancel(ctx), h.lease.ID(), scope, p.opts.ScopeGrace)
	if err != nil {
		p.log.Error("host session's label scope not recorded; it shares the process's", "err", err)
		return
	}
	h.scope = scope
	if len(ended) > 0 {
		p.log.Info("labels of a scope with no live process ended", "scope", scope, "labels", ended)
	}
}

// dropHost ends an HTTP session's ledger session.
func (p *Proxy) dropHost(id string) {
	p.hosts.mu.Lock()
	h := p.hosts.byID[id]
	delete(p.hosts.byID, id)
	p.hosts.mu.Unlock()
	if h != nil && h.own {
		if err := h.lease.End(context.Background()); err != nil {
			p.log.Warn("host session end not recorded", "err", err)
		}
		p.log.Info("host disconnected", "session", id)
	}
}

// resetHosts lifts every host's denial lock (mcp-guard reset).
func (p *Proxy) resetHosts() {
	p.hosts.mu.Lock()
	defer p.hosts.mu.Unlock()
	p.hosts.stdio.gate.Reset()
	if p.hosts.modern != nil {
		p.hosts.modern.gate.Reset()
	}
	for _, h := range p.hosts.byID {
		h.gate.Reset()
	}
}
