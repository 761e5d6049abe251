package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcp-guard/mcp-guard/gate"
	up "github.com/mcp-guard/mcp-guard/upstream"
)

// callers tracks the host requests in flight to one upstream, so a request
// the upstream makes while serving one can be relayed to that host.
type callers struct {
	mu   sync.Mutex
	seq  uint64
	ctxs map[uint64]context.Context
}

// add registers a host request in flight. The context stored (and handed
// to relays) ends when the request does, so a relay still waiting then (for
// the host or the operator) stops.
func (c *callers) add(ctx context.Context) (remove func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ctxs == nil {
		c.ctxs = map[uint64]context.Context{}
	}
	c.seq++
	id := c.seq
	ctx, cancel := context.WithCancel(ctx)
	c.ctxs[id] = ctx
	return func() {
		c.mu.Lock()
		delete(c.ctxs, id)
		c.mu.Unlock()
		cancel()
	}
}

// only returns the context of the one host session with requests in flight,
// or an error saying why there is none to relay to.
func (c *callers) only() (context.Context, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var found context.Context
	var sid string
	for _, ctx := range c.ctxs {
		id := "stdio"
		if cs := server.ClientSessionFromContext(ctx); cs != nil {
			id = cs.SessionID()
		}
		switch {
		case found == nil:
			found, sid = ctx, id
		case id != sid:
			return nil, errors.New("calls from more than one host session are in flight, so mcp-guard cannot tell which host to ask")
		}
	}
	if found == nil {
		return nil, errors.New("no host call to this server is in flight; mcp-guard relays such requests only to the host whose call caused them")
	}
	return found, nil
}

// onRefused is told, on u's read loop, of a sampling or elicitation
// request refused because u's config does not allow it. It is recorded off
// the read loop, and at most a burst of 20 then 10 a second: a server
// repeating a refused request cannot stall its own connection or fill the
// ledger.
func (p *Proxy) onRefused(u *upstream, method string, params json.RawMessage) {
	if ok, dropped := u.refusals.take(time.Now()); ok {
		if dropped > 0 {
			u.log.Warn("refused upstream requests not recorded (rate limit)", "dropped", dropped)
		}
		go p.refusedRequest(u, method, params)
	}
}

// relay passes an upstream's sampling or elicitation request to the host
// whose call caused it, through the gate's pipeline: recorded in the
// ledger before the host sees it and with its outcome after. When the
// server's config says ask, the request is recorded with an approval and
// waits for the operator first (approved, it is relayed once, with exactly
// the params bound; a decision after the wait does nothing: there is no
// grant).
func (p *Proxy) relay(u *upstream, method string, params json.RawMessage) (json.RawMessage, error) {
	caller, err := u.callers.only()
	host := p.hosts.stdio
	ctx := context.Background()
	if caller != nil {
		host, ctx = p.hostOf(caller), caller
	}
	kind := kindOf(method)
	if kind == gate.KindRoots {
		err = nil // answered from the config: no host is asked
	}
	r := gate.Request{
		Kind:      kind,
		SessionID: host.lease.ID(),
		Server:    u.name,
		Name:      method,
		Args:      params,
		Refuse:    err,
		Pending:   &host.pending,
	}
	res := p.pipe.Run(ctx, &r, gate.ForwardFunc(func(ctx context.Context, id int64, _ func(json.RawMessage, error)) (json.RawMessage, error) {
		if kind == gate.KindRoots {
			return p.opts.Gate.ClientAccess(u.name).RootsResult(), nil
		}
		if method == "elicitation/create" {
			var e struct{ Mode, URL, Message string }
			json.Unmarshal(params, &e)
			if e.Mode == "url" {
				p.log.Warn("upstream asks the host to open a URL (URL-mode elicitation)", "server", u.name, "call", id, "url", truncate(e.URL, 2048))
			}
		}
		p.log.Info("relaying upstream request to the host", "server", u.name, "method", method, "call", id)
		return p.askHost(ctx, method, params)
	}))
	switch res.Status {
	case gate.Done:
		return res.Res, nil
	case gate.Failed:
		return nil, res.Err
	case gate.Refused:
		p.log.Warn("upstream request refused", "server", u.name, "method", method, "call", res.CallID, "why", res.Decision.Reason)
		if res.Decision.Outcome == gate.Invalid {
			return nil, &up.RPCError{Code: codeInvalidParams, Message: res.Message}
		}
		return nil, errors.New(res.Message)
	case gate.Replaced:
		return nil, &up.RPCError{Code: codeInvalidParams, Message: res.Message}
	case gate.HeldBack, gate.Cancelled:
		return nil, &up.RPCError{Code: codeRejected, Message: res.Message}
	}
	return nil, errors.New(res.Message) // not recorded: not relayed
}

// refusedRequest records, through the gate's pipeline, a request an
// upstream made that the gate did not take up (gate.AdmitsClient): the
// pipeline denies it by the same access, and nothing is relayed.
func (p *Proxy) refusedRequest(u *upstream, method string, params json.RawMessage) {
	r := gate.Request{
		Kind:      kindOf(method),
		SessionID: p.opts.Lease.ID(),
		Server:    u.name,
		Name:      method,
		Args:      params,
	}
	p.pipe.Run(context.Background(), &r, gate.ForwardFunc(func(context.Context, int64, func(json.RawMessage, error)) (json.RawMessage, error) {
		return nil, errors.New("a refused request is not relayed")
	}))
}

func kindOf(method string) gate.Kind {
	switch method {
	case "sampling/createMessage":
		return gate.KindSampling
	case "roots/list":
		return gate.KindRoots
	}
	return gate.KindElicitation
}

// askHost sends the request to the host session of ctx and returns its
// answer as JSON.
func (p *Proxy) askHost(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	if rc := roundsOf(ctx); rc != nil {
		// A modern host's call: the host is asked in the call's answer.
		return rc.ask(ctx, method, params)
	}
	var (
		res any
		err error
	)
	switch method {
	case "sampling/createMessage":
		var req mcp.CreateMessageRequest // its params are the embedded CreateMessageParams, not Request.Params
		if err := json.Unmarshal(params, &req.CreateMessageParams); err != nil {
			return nil, &up.RPCError{Code: codeInvalidParams, Message: "sampling/createMessage: " + err.Error()}
		}
		req.Method = method
		out := p.expectHost(method, req.CreateMessageParams, params)
		defer out.done(ctx)
		//lint:ignore SA1019 an upstream's sampling/createMessage is relayed to the host (allow_sampling) while SEP-2577's deprecation window keeps it in the protocol
		r, rerr := p.srv.RequestSampling(ctx, req)
		if own, ok := ownAnswer(out.m, r, rerr); ok {
			return own, nil // the host's answer as the host wrote it
		}
		res, err = r, rerr
	default:
		var req mcp.ElicitationRequest
		if err := json.Unmarshal(params, &req.Params); err != nil {
			return nil, &up.RPCError{Code: codeInvalidParams, Message: "elicitation/create: " + err.Error()}
		}
		if schema, ok := member(params, "requestedSchema"); ok && string(schema) != "null" {
			// The form as the server wrote it: its fields in the server's
			// order, not re-encoded from a map.
			req.Params.RequestedSchema = schema
		}
		req.Method = method
		out := p.expectHost(method, req.Params, params)
		defer out.done(ctx)
		r, rerr := p.srv.RequestElicitation(ctx, req)
		if own, ok := ownAnswer(out.m, r, rerr); ok {
			return own, nil // the host's answer as the host wrote it
		}
		res, err = r, rerr
	}
	if err != nil {
		return nil, fmt.Errorf("the host did not answer %s: %w", method, err)
	}
	return json.Marshal(res)
}

// expected is a request to a host whose params are the server's own
// (hostout.go) while the relay waits for its answer.
type expected struct {
	m    *outMsg
	done func(ctx context.Context)
}

// expectHost leaves params, the server's own, to be written in place of
// mcp-go's encoding of mcpParams in the request of method to the host.
func (p *Proxy) expectHost(method string, mcpParams any, params json.RawMessage) expected {
	enc, err := json.Marshal(mcpParams)
	raw, _, rerr := oneLine(params)
	if err != nil || rerr != nil {
		return expected{done: func(context.Context) {}}
	}
	m := p.out.expect(method, enc, raw)
	return expected{m: m, done: func(ctx context.Context) {
		id, waiting := p.out.forget(method, enc, m)
		if waiting && ctx.Err() != nil {
			// The relay gave up on a request the host still has open (a
			// form it may still be showing): the host is told, so it
			// closes it (MCP: the sender of a request may cancel it).
			_ = p.notifyHost(context.WithoutCancel(ctx), "notifications/cancelled",
				map[string]any{"requestId": id, "reason": "no longer needed"})
		}
	}}
}

// ownAnswer is the host's answer to m's request as the host wrote it, when
// it came and says what mcp-go read (res) from the answer to this relay's
// request: the host's bytes are matched to a request by its params, and
// two requests with the same params in flight at once could otherwise
// swap answers.
func ownAnswer[T any](m *outMsg, res *T, err error) (json.RawMessage, bool) {
	own, ok := m.answered()
	if err != nil || !ok || res == nil {
		return nil, false
	}
	var read T
	if json.Unmarshal(own, &read) != nil {
		return nil, false
	}
	a, aerr := plainJSON(&read)
	b, berr := plainJSON(res)
	return own, aerr == nil && berr == nil && reflect.DeepEqual(a, b)
}

// plainJSON is v encoded and read back as plain JSON values.
func plainJSON(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var out any
	return out, json.Unmarshal(b, &out)
}
