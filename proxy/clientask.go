package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mcp-guard/mcp-guard/approvals"
	"github.com/mcp-guard/mcp-guard/ledger"
)

// askOperator records an upstream's sampling or elicitation request with an
// approval (what the operator reads: the messages, the form or the URL) and
// holds it for the operator up to limits.approval_wait, like a tool ask.
// Approved, it returns the call's ID: the approval is used and the call
// started, so the request is relayed once, with exactly the params bound.
// Otherwise it returns the error the upstream gets, and the ledger says
// why. A decision after the wait does nothing: the upstream is not waiting
// any more, so there is no grant.
func (p *Proxy) askOperator(ctx context.Context, host *hostSession, server, method string, params json.RawMessage, start ledger.CallStart) (int64, error) {
	if n := host.pending.Add(1); n > int64(p.opts.Limits.Pending) {
		host.pending.Add(-1)
		start.Decision, start.Reason = "deny", "limit: pending_approvals"
		rctx, cancel := context.WithTimeout(context.Background(), recordTimeout)
		defer cancel()
		if _, err := p.opts.Ledger.RecordCall(rctx, start); err != nil {
			p.log.Error("refused upstream request not recorded", "server", server, "method", method, "err", err)
		}
		return 0, &RPCError{Code: codeRejected, Message: fmt.Sprintf("mcp-guard: %s needs the operator's approval, and %d requests already wait for it (limits.pending_approvals); it was not relayed to the host", method, p.opts.Limits.Pending)}
	}
	defer host.pending.Add(-1)
	ap, err := approvals.New(approvals.Request{Server: server, Tool: method, Class: start.Class, Args: params})
	if err != nil {
		return 0, fmt.Errorf("the request was not relayed: %v", err)
	}
	wait := p.opts.Limits.ApprovalWait
	ap.ExpiresAt = time.Now().Add(wait)
	rctx, cancel := context.WithTimeout(context.Background(), recordTimeout)
	callID, apID, err := p.opts.Ledger.RecordAsk(rctx, start, ap)
	cancel()
	if err != nil {
		p.log.Error("upstream request not recorded, so not relayed", "server", server, "method", method, "err", err)
		return 0, hostSafef("the request was not relayed: %s", errNotRecorded)
	}
	p.log.Warn("upstream request waits for the operator", "server", server, "method", method, "approval", apID, "call", callID,
		"to_decide", fmt.Sprintf("mcp-guard approvals show %d", apID))
	a, outcome, err := p.hold(ctx, apID, wait, nil, func(c context.Context) error {
		return p.opts.Ledger.CloseApproval(c, apID, ledger.ApprovalExpired)
	})
	switch outcome {
	case heldApproved:
		p.log.Info("approved upstream request relayed", "server", server, "method", method, "approval", apID, "call", callID)
		return callID, nil
	case heldDenied:
		msg := fmt.Sprintf("mcp-guard: the operator denied %s (approval %d)", method, apID)
		if a.Reason != "" {
			msg += ": " + a.Reason
		}
		return 0, &RPCError{Code: codeRejected, Message: msg}
	case heldTimedOut:
		return 0, &RPCError{Code: codeRejected, Message: fmt.Sprintf("mcp-guard: %s waited %s for the operator's approval (approval %d) and was not relayed to the host", method, wait, apID)}
	case heldWithdrawn:
		return 0, &RPCError{Code: codeRejected, Message: fmt.Sprintf("mcp-guard: %s was not relayed: the host's call that caused it ended while it waited for approval %d", method, apID)}
	}
	return 0, &RPCError{Code: codeRejected, Message: fmt.Sprintf("mcp-guard: %s was not relayed: %v", method, err)}
}
