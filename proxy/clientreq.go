package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcp-guard/mcp-guard/internal/canon"
	"github.com/mcp-guard/mcp-guard/ledger"
)

// Access is what mcp-guard does with one kind of request an upstream makes
// of the host.
type Access int

const (
	AccessDeny  Access = iota // not offered at initialize; refused
	AccessAllow               // relayed to the host whose call caused it
	AccessAsk                 // relayed once the operator approves it
)

func (a Access) String() string {
	switch a {
	case AccessAllow:
		return "allow"
	case AccessAsk:
		return "ask"
	}
	return "deny"
}

// ClientAccess is what an upstream may ask of the host through mcp-guard.
// The zero value offers nothing: the capabilities are not announced at
// initialize, and such requests are refused.
type ClientAccess struct {
	Sampling    Access   // sampling/createMessage, relayed to the host whose call caused it
	Elicitation Access   // elicitation/create (form and URL mode) likewise
	Roots       []string // answer roots/list with exactly these URIs; the host's roots are never passed on
}

// of is the access for a request method.
func (a ClientAccess) of(method string) Access {
	switch method {
	case "sampling/createMessage":
		return a.Sampling
	case "elicitation/create":
		return a.Elicitation
	}
	return AccessDeny
}

// capabilities is the client capabilities object offered at initialize.
func (a ClientAccess) capabilities() string {
	caps := map[string]any{}
	if a.Sampling != AccessDeny {
		caps["sampling"] = map[string]any{}
	}
	if a.Elicitation != AccessDeny {
		caps["elicitation"] = map[string]any{"form": map[string]any{}, "url": map[string]any{}}
	}
	if a.Roots != nil {
		caps["roots"] = map[string]any{"listChanged": false}
	}
	b, _ := json.Marshal(caps)
	return string(b)
}

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

// onRequest answers what the upstream asks of its client: ping; roots/list
// from the configured list; sampling and elicitation relayed to the host
// when the config allows them, refused otherwise. It runs on the read loop,
// so relays go on in their own goroutines (the upstream's tools/call that
// caused them is still pending).
func (u *upstream) onRequest(id json.RawMessage, method string, params json.RawMessage) {
	switch method {
	case "ping":
		_ = u.conn.Reply(id, json.RawMessage(`{}`))
		return
	case "roots/list":
		if u.access.Roots != nil {
			roots := make([]map[string]string, 0, len(u.access.Roots))
			for _, r := range u.access.Roots {
				roots = append(roots, map[string]string{"uri": r})
			}
			b, _ := json.Marshal(map[string]any{"roots": roots})
			_ = u.conn.Reply(id, b)
			return
		}
	case "sampling/createMessage", "elicitation/create":
		if u.access.of(method) != AccessDeny && u.relay != nil {
			go u.relayRequest(id, method, params)
			return
		}
		// Recorded off the read loop, and at most a burst of 20 then 10 a
		// second: a server repeating a refused request cannot stall its
		// own connection or fill the ledger.
		if ok, dropped := u.refusals.take(time.Now()); ok && u.refused != nil {
			if dropped > 0 {
				u.log.Warn("refused upstream requests not recorded (rate limit)", "dropped", dropped)
			}
			go u.refused(u, method, params)
		}
	}
	u.log.Info("upstream request refused: capability not offered", "method", method)
	_ = u.conn.ReplyError(id, codeMethodNotFound, "mcp-guard does not offer "+method+" to this server (see allow_sampling, allow_elicitation and roots in its [[server]])")
}

func (u *upstream) relayRequest(id json.RawMessage, method string, params json.RawMessage) {
	res, err := u.relay(u, method, params)
	if err != nil {
		var rpcErr *RPCError
		if errors.As(err, &rpcErr) {
			_ = u.conn.ReplyError(id, rpcErr.Code, rpcErr.Message)
			return
		}
		_ = u.conn.ReplyError(id, codeInternal, "mcp-guard: "+err.Error())
		return
	}
	_ = u.conn.Reply(id, res)
}

// relay passes an upstream's sampling or elicitation request to the host
// whose call caused it, recorded in the ledger before the host sees it and
// with its outcome after. When the server's config says ask, the request is
// recorded with an approval and waits for the operator first.
func (p *Proxy) relay(u *upstream, method string, params json.RawMessage) (json.RawMessage, error) {
	caller, err := u.callers.only()
	access := u.access.of(method)
	start := ledger.CallStart{Kind: kindOf(method), Server: u.name, Tool: method, Decision: "allow", Reason: "allowed by the server's config"}
	if access == AccessAsk {
		start.Decision, start.Reason, start.Class = "ask", "the server's config says ask", kindOf(method)
	}
	if err != nil {
		start.Decision, start.Reason = "deny", err.Error()
	}
	host := p.hosts.stdio
	if caller != nil {
		host = p.hostOf(caller)
	}
	start.SessionID = host.lease.ID()
	if recordable(params) {
		start.Args = params
	} else {
		start.ArgsInvalid = params
		if err == nil && access == AccessAsk {
			err = &RPCError{Code: codeInvalidParams, Message: "mcp-guard: " + method + ": the params are not strict JSON or nest too deep to record, so they cannot be shown to the operator"}
			start.Decision, start.Reason = "invalid", "params are not strict JSON or nest too deep to record"
		}
	}
	if err == nil {
		if e := foldCollision(params); e != nil {
			err = &RPCError{Code: codeInvalidParams, Message: "mcp-guard: " + method + ": params refused: " + e.Error()}
			start.Decision, start.Reason = "invalid", "params "+e.Error()
		}
	}
	var callID int64
	switch {
	case err == nil && access == AccessAsk:
		if callID, err = p.askOperator(caller, host, u.name, method, params, start); err != nil {
			return nil, err
		}
	default:
		rctx, cancel := context.WithTimeout(context.Background(), recordTimeout)
		id, rerr := p.opts.Ledger.RecordCall(rctx, start)
		cancel()
		if rerr != nil {
			p.log.Error("upstream request not recorded, so not relayed", "server", u.name, "method", method, "err", rerr)
			return nil, hostSafef("the request was not relayed: %s", errNotRecorded)
		}
		if err != nil {
			p.log.Warn("upstream request refused", "server", u.name, "method", method, "call", id, "why", err)
			return nil, err
		}
		callID = id
	}
	if method == "elicitation/create" {
		var e struct{ Mode, URL, Message string }
		json.Unmarshal(params, &e)
		if e.Mode == "url" {
			p.log.Warn("upstream asks the host to open a URL (URL-mode elicitation)", "server", u.name, "call", callID, "url", truncate(e.URL, 2048))
		}
	}
	p.log.Info("relaying upstream request to the host", "server", u.name, "method", method, "call", callID)
	began := time.Now()
	res, err := p.askHost(caller, method, params)
	if err == nil {
		if e := foldCollision(res); e != nil {
			// The host's answer would read one way to the gate and the
			// ledger and another to a Go server (J3): it is not relayed.
			err = &RPCError{Code: codeInvalidParams, Message: "mcp-guard: the host's answer to " + method + " was refused: " + e.Error()}
			p.log.Warn("host answer refused", "server", u.name, "method", method, "call", callID, "why", e)
			p.recordLazy(callID, outcomeOf(nil, err, time.Since(began), ""))
			return nil, err
		}
	}
	p.recordLazy(callID, outcomeOf(res, err, time.Since(began), ""))
	return res, err
}

// foldCollision reports member names in raw, at any depth, that are equal
// under Unicode simple case folding (J3); raw that is not strict JSON is
// left to the checks that read it.
func foldCollision(raw json.RawMessage) error {
	v, err := canon.Decode(raw)
	if err != nil {
		return nil
	}
	if e := canon.FoldCollision(v); e != nil {
		return e
	}
	return nil
}

// refusedRequest records a request an upstream made without the capability.
func (p *Proxy) refusedRequest(u *upstream, method string, params json.RawMessage) {
	start := ledger.CallStart{Kind: kindOf(method), SessionID: p.opts.Lease.ID(), Server: u.name, Tool: method, Decision: "deny",
		Reason: "the server's config does not allow " + method}
	if recordable(params) {
		start.Args = params
	} else {
		start.ArgsInvalid = params
	}
	rctx, cancel := context.WithTimeout(context.Background(), recordTimeout)
	defer cancel()
	if _, err := p.opts.Ledger.RecordCall(rctx, start); err != nil {
		p.log.Error("refused upstream request not recorded", "server", u.name, "method", method, "err", err)
	}
}

func kindOf(method string) string {
	if method == "sampling/createMessage" {
		return ledger.KindSampling
	}
	return ledger.KindElicitation
}

// askHost sends the request to the host session of ctx and returns its
// answer as JSON.
func (p *Proxy) askHost(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	var (
		res any
		err error
	)
	switch method {
	case "sampling/createMessage":
		var req mcp.CreateMessageRequest // its params are the embedded CreateMessageParams, not Request.Params
		if err := json.Unmarshal(params, &req.CreateMessageParams); err != nil {
			return nil, &RPCError{Code: codeInvalidParams, Message: "sampling/createMessage: " + err.Error()}
		}
		req.Method = method
		res, err = p.srv.RequestSampling(ctx, req)
	default:
		var req mcp.ElicitationRequest
		if err := json.Unmarshal(params, &req.Params); err != nil {
			return nil, &RPCError{Code: codeInvalidParams, Message: "elicitation/create: " + err.Error()}
		}
		req.Method = method
		res, err = p.srv.RequestElicitation(ctx, req)
	}
	if err != nil {
		return nil, fmt.Errorf("the host did not answer %s: %w", method, err)
	}
	return json.Marshal(res)
}
