package proxy

import (
	"context"
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-guard/mcp-guard/gate"
)

// observe records a listing in the ledger's pins: the server's instructions
// and every tool that passes the checks (a refused definition is never
// pinned). What was never seen is pinned at once only when trust says why
// (trustNew); otherwise it waits for the operator as "new".
func (p *Proxy) observe(ctx context.Context, server string, l listing, trust string) {
	if p.opts.DryRun {
		return
	}
	if _, err := p.opts.Ledger.ObservePinAs(ctx, server, gate.InstructionsPin, gate.DigestOf(l.instructions), p.pinRaw(l.instructions), trust); err != nil {
		p.log.Error("instructions not pinned", "server", server, "err", err)
	}
	for _, t := range l.tools {
		if _, _, why := gate.CheckTool(p.schemas, t); why != "" || l.dups[t.Name] {
			continue
		}
		pn, err := p.opts.Ledger.ObservePinAs(ctx, server, t.Name, t.Digest(), p.pinRaw(t.Raw), trust)
		if err != nil {
			p.log.Error("tool not pinned", "server", server, "tool", t.Name, "err", err)
		} else if gate.Waits(pn) {
			p.log.Warn("the server lists a tool never accepted; it waits for the operator", "server", server, "tool", t.Name,
				"see", "mcp-guard pin diff "+server+"/"+t.Name)
		}
	}
}

// refresh recomputes what the host sees (gate.ComputeView) from the latest
// listings and the ledger's pins, and gives the host each list that
// changed in one batch (one list_changed each).
func (p *Proxy) refresh(ctx context.Context) error {
	p.refreshMu.Lock()
	defer p.refreshMu.Unlock()
	// The version first: a decision between the two reads is seen again.
	version, verErr := p.opts.Ledger.PinsVersion(ctx)
	pins, err := p.opts.Ledger.Pins(ctx, "")
	if err != nil {
		return err
	}
	if verErr == nil {
		defer p.pinsSeen.Store(version)
	}
	in := gate.ViewInput{Servers: p.order, Bare: p.opts.BareNames, Listings: map[string]gate.ServerListing{}, Pins: pins, Secrets: p.opts.Secrets,
		Rules: p.opts.Gate, Schemas: p.schemas, Present: Presenter{}, DryRunTOFU: p.opts.DryRun && p.opts.PinTOFU}
	p.mu.RLock()
	for name, l := range p.live {
		in.Listings[name] = gate.ServerListing{Tools: l.tools, Instructions: l.instructions, TrustNewTools: p.spec(name).TrustNewTools}
	}
	p.mu.RUnlock()
	p.content.mu.Lock()
	for name, cl := range p.content.live {
		// Only servers whose tools are live (up and listed) are shown.
		if l, ok := in.Listings[name]; ok {
			l.Items, l.ItemErrs = cl.items, cl.errs
			in.Listings[name] = l
		}
	}
	p.content.mu.Unlock()
	v := &view{View: gate.ComputeView(in)}
	v.lists = hostLists(v)

	p.mu.Lock()
	old := p.view
	p.view = v
	p.exposed.Set(v.View)
	p.mu.Unlock()
	for _, w := range v.InstructionsWithheld {
		p.log.Warn("server instructions not given to hosts", "server", w.Server, "reason", w.Why)
	}
	if old.Exposed == nil || old.Sig != v.Sig {
		p.broadcast(string(mcp.MethodNotificationToolsListChanged), nil)
		for _, r := range v.Report {
			if r.Hidden != "" {
				p.log.Info("tool not exposed", "server", r.Server, "tool", r.Tool, "reason", r.Hidden)
			}
		}
		p.log.Info("tools exposed", "exposed", len(v.Exposed), "hidden", len(v.Report)-len(v.Exposed), "upstreams", len(in.Listings))
	}
	p.showContent(old.Content, v.Content) // prompts and resources (content.go)
	return nil
}

// current returns the gate.ExposedTool tool of that name in the current view.
func (p *Proxy) current(name string) (gate.ExposedTool, bool) {
	return p.exposed.Tool(name)
}

// headerTool is the exposed tool of that name as a 2026-07-28 request's
// headers are checked against it (httppost.go modernValid): the x-mcp-header
// annotations of its input schema, as the host was shown it.
func (p *Proxy) headerTool(name string) (mcp.Tool, bool) {
	e, ok := p.current(name)
	if !ok {
		return mcp.Tool{}, false
	}
	return mcp.Tool{Name: e.Name, RawInputSchema: e.Tool.InputSchema}, true
}

// recordUnreadable records a tools/call whose params do not read (an
// argument number beyond a float64, a field of the wrong type): it is
// refused and nothing is forwarded, but it still leaves a row, its
// arguments kept verbatim out of band. A request without a tool name calls
// nothing: it is only logged.
func (p *Proxy) recordUnreadable(ctx context.Context, params json.RawMessage, readErr error) {
	var m struct {
		Name      json.RawMessage `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	var name string
	if json.Unmarshal(params, &m) != nil || json.Unmarshal(m.Name, &name) != nil {
		p.log.Warn("unreadable tools/call refused", "err", readErr)
		return
	}
	p.recordRefused(ctx, name, m.Arguments, readErr)
}

// recordRefused records a tools/call refused before the pipeline: a name
// not exposed, or (readErr set) a request that could not be read.
func (p *Proxy) recordRefused(ctx context.Context, name string, args json.RawMessage, readErr error) {
	if name == "" {
		p.log.Warn("tools/call without a tool name refused")
		return
	}
	id, start, err := p.pipe.Refuse(ctx, p.toolRefusal(ctx, name, args, readErr))
	if err != nil {
		p.log.Error("refused call not recorded", "tool", name, "err", err)
		return
	}
	p.log.Warn("call refused before the gate", "id", id, "tool", name, "decision", start.Decision, "reason", start.Reason)
}

// toolRefusal is what the view knows of a tools/call refused before the
// pipeline decided it: the tool name names, if any, and why it is not
// shown (or, readErr set, that it is).
func (p *Proxy) toolRefusal(ctx context.Context, name string, args json.RawMessage, readErr error) gate.Refusal {
	return p.exposed.ToolRefusal(p.hostOf(ctx).lease.ID(), name, args, readErr)
}
