package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-guard/mcp-guard/gate"
	up "github.com/mcp-guard/mcp-guard/upstream"
)

// relayable marks a host request's context as one a request its server
// makes while serving it may be relayed to (its host asked): every
// tools/call, and a get or read of a host before 2026-07-28. upstream
// keeps the contexts of the requests in flight (Client.Callers), each
// ended when its request is, so a relay still waiting then (for the host
// or the operator) stops.
func relayable(ctx context.Context) context.Context {
	return context.WithValue(ctx, relayableKey{}, true)
}

type relayableKey struct{}

// onlyCaller returns, of the contexts of the requests in flight to a
// server, the one host session's that can be relayed to, or an error
// saying why there is none to relay to.
func onlyCaller(inFlight []context.Context) (context.Context, error) {
	var found context.Context
	var sid string
	others := 0
	for _, ctx := range inFlight {
		if ctx.Value(relayableKey{}) == nil {
			others++
			continue
		}
		id := "stdio"
		if c := connOf(ctx); c != nil {
			id = c.connID()
		}
		switch {
		case found == nil:
			found, sid = ctx, id
		case id != sid:
			return nil, errors.New("calls from more than one host session are in flight, so mcp-guard cannot tell which host to ask")
		}
	}
	switch {
	case found == nil && others > 0:
		return nil, errors.New("the host requests in flight to this server are ones during which mcp-guard cannot ask their host (a 2026-07-28 host's get or read, a subscription, a completion); mcp-guard relays such requests only to the host whose call caused them")
	case found == nil:
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
	caller, err := onlyCaller(u.Callers())
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

// hostAsker is a host session mcp-guard can ask (hostpeer.go): the
// request goes out with its params as given, and the host's answer comes
// back as the host wrote it.
type hostAsker interface {
	askHost(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, *mcp.JSONRPCErrorDetails, error)
}

// askHost sends the request, params the server's own bytes (or mcp-guard's
// own form), to the host connection of ctx, and returns the host's answer
// as the host wrote it, on one line. Params that do not read as the
// request in mcp-go's types, and an answer that does not read as the
// result, are refused.
func (p *Proxy) askHost(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	if rc := roundsOf(ctx); rc != nil {
		// A modern host's call: the host is asked in the call's answer.
		return rc.ask(ctx, method, params)
	}
	if modernHost(ctx) {
		return nil, fmt.Errorf("the host did not answer %s: protocol %s has no requests to the host outside a call's answer", method, mcp.ProtocolVersion20260728)
	}
	one, _, err := oneLine(params)
	if err != nil {
		return nil, &up.RPCError{Code: codeInvalidParams, Message: method + ": " + err.Error()}
	}
	if err := readHostRequest(method, one); err != nil {
		return nil, err
	}
	asker, ok := connOf(ctx).(hostAsker)
	if !ok {
		return nil, fmt.Errorf("the host did not answer %s: the request has no host connection to ask on", method)
	}
	res, failed, err := asker.askHost(ctx, method, one)
	if err == nil && failed != nil {
		err = fmt.Errorf("%s request failed: %s", requestNoun(method), failed.Message)
	}
	if err == nil {
		err = readHostAnswer(method, res)
	}
	if err != nil {
		return nil, fmt.Errorf("the host did not answer %s: %w", method, err)
	}
	if res, _, err = oneLine(res); err != nil {
		return nil, fmt.Errorf("the host did not answer %s: %w", method, err)
	}
	return res, nil
}

// requestNoun is what an error says a request of method was.
func requestNoun(method string) string {
	if method == string(mcp.MethodSamplingCreateMessage) {
		return "sampling"
	}
	return "elicitation"
}

// readHostRequest refuses params mcp-go does not read as a request of
// method: a sampling request's, or a valid elicitation form or URL.
func readHostRequest(method string, params json.RawMessage) error {
	if method == string(mcp.MethodSamplingCreateMessage) {
		var ps mcp.CreateMessageParams
		if err := json.Unmarshal(params, &ps); err != nil {
			return &up.RPCError{Code: codeInvalidParams, Message: method + ": " + err.Error()}
		}
		return nil
	}
	var ps mcp.ElicitationParams
	if err := json.Unmarshal(params, &ps); err != nil {
		return &up.RPCError{Code: codeInvalidParams, Message: method + ": " + err.Error()}
	}
	return ps.Validate()
}

// readHostAnswer refuses a host's result mcp-go does not read as the
// result of method.
func readHostAnswer(method string, res json.RawMessage) error {
	if method == string(mcp.MethodSamplingCreateMessage) {
		var r mcp.CreateMessageResult
		if err := json.Unmarshal(res, &r); err != nil {
			return fmt.Errorf("failed to unmarshal sampling response: %w", err)
		}
		if _, err := mcp.ParseSamplingContent(r.Content); err != nil {
			return fmt.Errorf("failed to parse sampling response content: %w", err)
		}
		return nil
	}
	var r mcp.ElicitationResult
	if err := json.Unmarshal(res, &r); err != nil {
		return fmt.Errorf("failed to unmarshal elicitation response: %w", err)
	}
	return nil
}

// withdrawn tells the host of ctx that mcp-guard gave up on its request id
// while the host still had it open (a form it may still be showing), so
// that it closes it (MCP: the sender of a request may cancel it).
func (p *Proxy) withdrawn(ctx context.Context, id int64) {
	_ = notifyHost(context.WithoutCancel(ctx), "notifications/cancelled",
		json.RawMessage(`{"reason":"no longer needed","requestId":`+strconv.FormatInt(id, 10)+`}`))
}
