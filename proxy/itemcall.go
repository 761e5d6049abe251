package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mcp-guard/mcp-guard/ledger"
	"github.com/mcp-guard/mcp-guard/pin"
)

// A prompts/get or resources/read is a call like a tools/call: decided,
// committed to the ledger before it is forwarded, its outcome recorded
// whatever the host does. These are the parts they share.

// recordItemCall commits a decided get or read, on a context that outlives
// the host's cancellation.
func (p *Proxy) recordItemCall(ctx context.Context, start ledger.CallStart) (int64, error) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	return p.opts.Ledger.RecordCall(rctx, start)
}

// forwardItem sends a recorded, allowed get or read upstream and returns
// its raw result; its outcome is recorded whatever the host does. A result
// over limits.result_bytes is recorded with its digest and not returned.
func (p *Proxy) forwardItem(ctx context.Context, server, method string, params json.RawMessage, id int64, name string) (json.RawMessage, error) {
	u := p.upstream(server)
	if u == nil {
		err := fmt.Errorf("upstream %q is not connected (%v); mcp-guard is connecting it again", server, p.Failed()[server])
		p.recordLazy(id, outcomeOf(nil, err, 0, ""))
		p.log.Warn(method+" not forwarded", "id", id, "name", name, "err", err)
		return nil, hostFailure(name, id, notConnected(server))
	}
	began := time.Now()
	late := func(res json.RawMessage, err error) {
		p.recordLate(id, outcomeOf(res, err, time.Since(began), ""))
	}
	res, err := u.request(ctx, method, params, late)
	switch {
	case err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()):
		p.recordLazy(id, outcomeOf(nil, err, time.Since(began), "cancelled"))
		return nil, fmt.Errorf("mcp-guard: %s: cancelled by the host", name)
	case err != nil:
		p.recordLazy(id, outcomeOf(nil, err, time.Since(began), ""))
		p.log.Warn(method+" failed", "id", id, "name", name, "err", err)
		return nil, hostFailure(name, id, err)
	}
	o := outcomeOf(res, nil, time.Since(began), "")
	if len(res) > p.opts.Limits.ResultBytes {
		o.IsError, o.Err = true, fmt.Sprintf("limit: result_bytes: %d bytes over limits.result_bytes (%d); not passed to the host", len(res), p.opts.Limits.ResultBytes)
		p.recordLazy(id, o)
		p.log.Warn("result too large; refused", "id", id, "name", name, "bytes", len(res))
		return nil, fmt.Errorf("mcp-guard: %s returned %d bytes, over limits.result_bytes (%d); the result was not passed on (ledger call %d, sha256:%s)", name, len(res), p.opts.Limits.ResultBytes, id, o.ResultDigest)
	}
	p.recordLazy(id, o)
	return res, nil
}

// request forwards one request other than tools/call within the call
// timeout; when ctx is cancelled, late (when set) later receives the
// upstream's answer.
func (u *upstream) request(ctx context.Context, method string, params json.RawMessage, late func(json.RawMessage, error)) (json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(ctx, u.limits.CallTimeout)
	defer cancel()
	res, err := u.conn.CallLate(ctx, method, params, u.limits.CallTimeout, late)
	if err = u.why(ctx, err); errors.Is(err, context.DeadlineExceeded) {
		return nil, hostSafef("upstream %q did not answer within %s (limits.call_timeout)", u.name, u.limits.CallTimeout)
	}
	return res, err
}

// recordUnknownItem records a get or read of a name or URI the host was
// never shown (or that was withdrawn) before it is refused. Nothing was
// forwarded. args are a get's arguments.
func (p *Proxy) recordUnknownItem(ctx context.Context, kind pin.ItemKind, name string, args []byte) {
	start := ledger.CallStart{
		Kind:      ledger.KindPrompt,
		SessionID: p.hostOf(ctx).lease.ID(),
		Exposed:   name,
		Decision:  "unknown_prompt",
		Reason:    "no prompt of that name is exposed",
		Args:      args,
	}
	if kind != pin.Prompts {
		start.Kind, start.Decision = ledger.KindResource, "unknown_resource"
		start.Reason = "neither a resource mcp-guard exposes nor one of its templates' URIs"
		if server, uri, ok := p.upstreamURI(name); ok {
			start.Server, start.Tool = server, uri
			start.Args, _ = resourceArgs(uri)
		}
	}
	if h, ok := p.hiddenItem(kind, name); ok {
		start.Server, start.Tool = h.server, h.key
		start.Reason = fmt.Sprintf("the %s is not exposed: %s", kind.Noun(), h.why)
	}
	if start.Exposed == "" {
		start.Exposed = "(empty)"
	}
	id, err := p.recordItemCall(ctx, start)
	if err != nil {
		p.log.Error("refused "+kind.Noun()+" not recorded", "name", name, "err", err)
		return
	}
	p.log.Warn(kind.Noun()+" refused: nothing of that name is exposed", "id", id, "name", name, "reason", start.Reason)
}
