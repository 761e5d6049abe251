package proxy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcp-guard/mcp-guard/gate"
	"github.com/mcp-guard/mcp-guard/internal/canon"
	"github.com/mcp-guard/mcp-guard/ledger"
)

// recordTimeout bounds a ledger write made on behalf of a call; it runs on a
// context that outlives the host's cancellation (L6).
const recordTimeout = 30 * time.Second

// handler is the one tools/call handler: the gate decides, the decision is
// committed to the ledger, and only then is an allowed call forwarded, with
// the argument bytes that were checked and recorded.
func (p *Proxy) handler(e exposed) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args := req.Params.RawArguments
		if len(args) > 0 {
			if one, changed, err := oneLine(args); err == nil {
				if changed {
					p.log.Info("arguments had line breaks between tokens; removed before checking and forwarding", "tool", e.Name)
				}
				args = one
			}
		}
		if now, ok := p.current(e.Name); !ok || now.Tool.Digest() != e.Tool.Digest() {
			// Withdrawn (its definition changed) between the host's list and this call.
			p.recordUnknown(ctx, &req)
			return mcp.NewToolResultError(fmt.Sprintf("mcp-guard: %s was withdrawn: its definition changed and waits for the operator", e.Name)), nil
		}
		host := p.hostOf(ctx)
		d := host.gate.Decide(e.Server, e.Tool.Name, e.Schema, args)
		if d.Outcome == gate.Allow && d.Class != "read" {
			// L7: the identical call was interrupted by a crash; whether it
			// ran is unknown, so running it again is the operator's decision.
			if again, err := p.opts.Ledger.WasInterrupted(context.WithoutCancel(ctx), e.Server, e.Tool.Name, args); err != nil || again {
				d.Outcome = gate.Ask
				d.Reason = "the identical call was interrupted by a crash; the operator decides whether it runs again"
				if err != nil {
					d.Reason = "could not check for an interrupted identical call: " + err.Error()
				}
			}
		}
		start := ledger.CallStart{
			SessionID: host.lease.ID(),
			Server:    e.Server,
			Tool:      e.Tool.Name,
			Exposed:   e.Name,
			PinDigest: e.Tool.Digest(),
			Decision:  d.Outcome.String(),
			Rule:      d.Rule,
			Class:     string(d.Class),
			Reason:    d.Reason,
		}
		if d.Outcome == gate.Invalid {
			start.ArgsInvalid = args // kept verbatim, out of band, never as arguments
		} else {
			start.Args, start.ArgsDigested = args, d.Args
		}
		if d.Outcome == gate.Ask {
			return p.ask(ctx, req, e, args, d, start)
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
		id, err := p.opts.Ledger.RecordCall(rctx, start)
		cancel()
		if err != nil {
			p.log.Error("call not recorded, so not made", "tool", e.Name, "err", err)
			return mcp.NewToolResultError(fmt.Sprintf("mcp-guard: the call to %s/%s: %s", e.Server, e.Tool.Name, errNotRecorded)), nil
		}
		p.log.Info("call", "id", id, "tool", e.Name, "decision", d.Outcome.String(), "rule", d.Rule, "class", string(d.Class), "reason", d.Reason, "limit", d.Limit)
		if d.Outcome != gate.Allow {
			return mcp.NewToolResultError(fmt.Sprintf("%s (ledger call %d)", d.Message, id)), nil
		}
		return p.forward(ctx, req, e, args, id)
	}
}

// forward sends a recorded, allowed call upstream and passes its result to
// the host; its outcome is recorded whatever the host does.
func (p *Proxy) forward(ctx context.Context, req mcp.CallToolRequest, e exposed, args json.RawMessage, id int64) (*mcp.CallToolResult, error) {
	{
		u := p.upstream(e.Server)
		if u == nil {
			err := fmt.Errorf("upstream %q is not connected (%v); mcp-guard is connecting it again", e.Server, p.Failed()[e.Server])
			p.recordLazy(id, outcomeOf(nil, err, 0, ""))
			p.log.Warn("call not forwarded", "id", id, "tool", e.Name, "err", err)
			return nil, hostFailure(e.Name, id, notConnected(e.Server))
		}
		var relay *progressRelay
		var onProgress func(json.RawMessage)
		if req.Params.Meta != nil && req.Params.Meta.ProgressToken != nil {
			relay = p.newProgressRelay(ctx, req.Params.Meta.ProgressToken)
			onProgress = relay.offer
		}
		began := time.Now()
		late := func(res json.RawMessage, err error) {
			p.recordLate(id, outcomeOf(res, err, time.Since(began), ""))
		}
		done := u.callers.add(ctx) // a sampling or elicitation request it makes now goes to this host
		res, err := u.callTool(ctx, e.Tool.Name, args, onProgress, late)
		done()
		if relay != nil {
			// The latest progress goes to the host before the result.
			if passed, dropped, refused := relay.finish(); dropped+refused > 0 {
				p.log.Info("upstream progress notifications left out", "id", id, "tool", e.Name,
					"passed", passed, "coalesced", dropped, "refused", refused)
			}
		}
		switch {
		case err != nil && ctx.Err() != nil && errors.Is(err, ctx.Err()):
			p.recordLazy(id, outcomeOf(nil, err, time.Since(began), "cancelled"))
			return nil, fmt.Errorf("mcp-guard: %s: cancelled by the host", e.Name)
		case err != nil:
			p.recordLazy(id, outcomeOf(nil, err, time.Since(began), ""))
			p.log.Warn("call failed", "id", id, "tool", e.Name, "err", err)
			return nil, hostFailure(e.Name, id, err)
		}
		// The outcome is committed off the host's path: the decision is
		// already durable, and a crash before this commit leaves the call
		// "started", which the next start marks interrupted.
		o := outcomeOf(res, nil, time.Since(began), "")
		if len(res) > p.opts.Limits.ResultBytes {
			// Recorded with the digest of what the upstream sent; the host
			// gets an error result instead.
			o.IsError, o.Err = true, fmt.Sprintf("limit: result_bytes: %d bytes over limits.result_bytes (%d); not passed to the host", len(res), p.opts.Limits.ResultBytes)
			p.recordLazy(id, o)
			p.log.Warn("result too large; replaced by an error", "id", id, "tool", e.Name, "bytes", len(res))
			return mcp.NewToolResultError(fmt.Sprintf("mcp-guard: %s returned %d bytes, over limits.result_bytes (%d); the result was not passed on (ledger call %d, sha256:%s)", e.Name, len(res), p.opts.Limits.ResultBytes, id, o.ResultDigest)), nil
		}
		if why := outputViolation(e.Output, res); why != "" {
			// Recorded with the digest of what the upstream sent; the host
			// gets an error result naming where it failed.
			o.IsError, o.Err = true, "output_schema: the result breaks the pinned outputSchema: "+why+"; not passed to the host"
			p.recordLazy(id, o)
			p.log.Warn("result breaks the pinned outputSchema; replaced by an error", "id", id, "tool", e.Name, "why", why)
			return mcp.NewToolResultError(fmt.Sprintf("mcp-guard: %s returned a result that breaks its pinned outputSchema: %s. It was not passed on (ledger call %d).", e.Name, why, id)), nil
		}
		p.recordLazy(id, o)
		out, err := hostResult(res)
		if err != nil {
			p.log.Warn("upstream result refused", "id", id, "tool", e.Name, "err", err)
			return mcp.NewToolResultError(fmt.Sprintf("mcp-guard: %s returned a result mcp-guard cannot read: %v (ledger call %d)", e.Name, err, id)), nil
		}
		return out, nil
	}
}

// outcomeOf describes how a forwarded call ended. The result digest is the
// SHA-256 of the raw bytes the upstream sent.
func outcomeOf(res json.RawMessage, err error, d time.Duration, state string) ledger.Outcome {
	o := ledger.Outcome{State: state, Duration: d}
	if err != nil {
		o.Err = err.Error()
		if o.State == "" {
			o.State = "failed"
		}
		return o
	}
	sum := sha256.Sum256(res)
	o.ResultDigest = hex.EncodeToString(sum[:])
	o.ResultBytes = int64(len(res))
	var r struct {
		IsError bool `json:"isError"`
	}
	_ = json.Unmarshal(res, &r)
	o.IsError = r.IsError
	if o.State == "" {
		o.State = "done"
	}
	return o
}

// recordLazy queues a call's outcome without waiting for its commit; it is
// in the ledger's queue before the host hears the answer, and no host
// cancellation can take it out.
func (p *Proxy) recordLazy(id int64, o ledger.Outcome) {
	done := p.opts.Ledger.RecordOutcomeLazy(id, o)
	go func() {
		if err := <-done; err != nil {
			p.log.Error("call outcome not recorded", "id", id, "err", err)
		}
	}()
}

// recordLate records what the upstream answered after the host gave up, on a
// context of its own.
func (p *Proxy) recordLate(id int64, o ledger.Outcome) {
	ctx, cancel := context.WithTimeout(context.Background(), recordTimeout)
	defer cancel()
	if err := p.opts.Ledger.RecordLateOutcome(ctx, id, o); err != nil {
		p.log.Error("late call outcome not recorded", "id", id, "err", err)
	}
}

// rawContent is one content block passed to the host as the upstream sent
// it, whatever its type. Embedding TextContent satisfies mcp-go's sealed
// Content interface; MarshalJSON emits the raw block.
type rawContent struct {
	mcp.TextContent
	raw json.RawMessage
}

func (r rawContent) MarshalJSON() ([]byte, error) { return r.raw, nil }

// hostResult carries content, structuredContent, isError and _meta from the
// upstream's raw result to the host.
func hostResult(raw json.RawMessage) (*mcp.CallToolResult, error) {
	var r struct {
		Content           *[]json.RawMessage         `json:"content"`
		StructuredContent json.RawMessage            `json:"structuredContent"`
		IsError           bool                       `json:"isError"`
		Meta              map[string]json.RawMessage `json:"_meta"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, err
	}
	if r.Content == nil {
		return nil, fmt.Errorf(`no "content" array`)
	}
	out := &mcp.CallToolResult{Content: make([]mcp.Content, 0, len(*r.Content)), IsError: r.IsError}
	for _, c := range *r.Content {
		out.Content = append(out.Content, rawContent{raw: c})
	}
	if len(r.StructuredContent) > 0 && string(r.StructuredContent) != "null" {
		out.RawStructuredContent = r.StructuredContent
	}
	if len(r.Meta) > 0 {
		out.Meta = &mcp.Meta{AdditionalFields: rawFields(r.Meta)}
	}
	return out, nil
}

// recordable reports whether b may be recorded as a call's arguments: strict
// JSON the ledger can hold (ledger.MaxArgsDepth). Anything else is recorded
// verbatim as ArgsInvalid.
func recordable(b []byte) bool {
	return canon.Check(b) == nil && canon.Depth(b) <= ledger.MaxArgsDepth
}
