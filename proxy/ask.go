package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-guard/mcp-guard/approvals"
	"github.com/mcp-guard/mcp-guard/gate"
	"github.com/mcp-guard/mcp-guard/ledger"
)

// ask holds a call for the operator: the call and its approval are recorded
// together, the host's request waits up to limits.approval_wait (with
// progress notifications when the host asked for them), and only an approval
// whose row still matches its binding lets the call run, once.
func (p *Proxy) ask(ctx context.Context, req mcp.CallToolRequest, e exposed, args json.RawMessage, d gate.Decision, start ledger.CallStart) (*mcp.CallToolResult, error) {
	name := e.Server + "/" + e.Tool.Name
	host := p.hostOf(ctx)
	if n := host.pending.Add(1); n > int64(p.opts.Limits.Pending) {
		host.pending.Add(-1)
		start.Decision, start.Reason = gate.Deny.String(), "limit: pending_approvals"
		if _, err := p.opts.Ledger.RecordCall(context.WithoutCancel(ctx), start); err != nil {
			p.log.Error("refused call not recorded", "tool", e.Name, "err", err)
		}
		return mcp.NewToolResultError(fmt.Sprintf("mcp-guard: the call to %s needs the operator's approval, and %d calls already wait for it (limits.pending_approvals); try again after the operator decides", name, p.opts.Limits.Pending)), nil
	}
	defer host.pending.Add(-1)
	// An approval the operator gave after an earlier identical call stopped
	// waiting is a grant: this call runs once on it.
	gctx, gcancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	callID, grantID, err := p.opts.Ledger.ConsumeGrant(gctx, start, approvals.Check)
	gcancel()
	if err == nil {
		p.log.Info("call runs on a grant", "approval", grantID, "call", callID, "tool", e.Name)
		return p.forward(ctx, req, e, args, callID)
	}
	if !errors.Is(err, ledger.ErrNoGrant) {
		p.log.Error("grant lookup failed", "tool", e.Name, "err", err)
	}
	ap, err := approvals.New(approvals.Request{Server: e.Server, Tool: e.Tool.Name, PinDigest: e.Tool.Digest(),
		Class: string(d.Class), Rule: d.Rule, Args: args})
	if err != nil {
		return mcp.NewToolResultError(fmt.Sprintf("mcp-guard: the call to %s was not made: %v", name, err)), nil
	}
	wait := p.opts.Limits.ApprovalWait
	ap.ExpiresAt = time.Now().Add(wait + p.opts.Limits.GrantTTL)
	ap.GrantTTL = p.opts.Limits.GrantTTL
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	callID, apID, err := p.opts.Ledger.RecordAsk(rctx, start, ap)
	cancel()
	if err != nil {
		p.log.Error("ask not recorded, so not made", "tool", e.Name, "err", err)
		return mcp.NewToolResultError(fmt.Sprintf("mcp-guard: the call to %s: %s", name, errNotRecorded)), nil
	}
	p.log.Warn("call waits for the operator", "approval", apID, "call", callID, "tool", e.Name,
		"to_decide", fmt.Sprintf("mcp-guard approvals show %d", apID))

	var progress func(n int)
	if req.Params.Meta != nil && req.Params.Meta.ProgressToken != nil {
		srv, token := p.srv, req.Params.Meta.ProgressToken
		progress = func(n int) {
			_ = srv.SendNotificationToClient(ctx, "notifications/progress", map[string]any{
				"progressToken": token, "progress": n,
				"message": fmt.Sprintf("waiting for the operator to approve the call (mcp-guard approve %d)", apID),
			})
		}
	}
	a, outcome, err := p.hold(ctx, apID, wait, progress, func(c context.Context) error { return p.opts.Ledger.ReleaseCall(c, apID) })
	switch outcome {
	case heldWithdrawn:
		return nil, fmt.Errorf("mcp-guard: %s: cancelled by the host while waiting for approval %d", e.Name, apID)
	case heldTimedOut:
		return mcp.NewToolResultError(fmt.Sprintf("mcp-guard: the call to %s waited %s for the operator's approval and was not made. It is approval %d: once the operator approves it (mcp-guard approve %d), call again with exactly the same arguments within %s and it will run once.", name, wait, apID, apID, p.opts.Limits.GrantTTL)), nil
	case heldDenied:
		msg := fmt.Sprintf("mcp-guard: the operator denied the call to %s (approval %d)", name, apID)
		if a.Reason != "" {
			msg += ": " + a.Reason
		}
		return mcp.NewToolResultError(msg), nil
	case heldApproved:
		p.log.Info("approved call forwarded", "approval", apID, "call", callID, "tool", e.Name)
		return p.forward(ctx, req, e, args, callID)
	}
	p.log.Error("approved call not made", "approval", apID, "call", callID, "tool", e.Name, "err", err)
	return mcp.NewToolResultError(fmt.Sprintf("mcp-guard: the call to %s was not made: %s (ledger call %d)", name, hostReason(err), callID)), nil
}
