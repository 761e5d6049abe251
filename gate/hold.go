package gate

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mcp-guard/mcp-guard/approvals"
	"github.com/mcp-guard/mcp-guard/ledger"
)

// askPoll is how often a held request looks at its approval; decisions made
// by another process show up within it.
const askPoll = 100 * time.Millisecond

// held is how a wait for the operator ended.
type held int

const (
	heldApproved  held = iota // approved and now used: the held call is started, to run once
	heldDenied                // the operator denied it; the approval's Reason says why
	heldTimedOut              // nobody decided within the wait; timeout has run
	heldWithdrawn             // ctx ended first: the approval is withdrawn
	heldFailed                // the approval cannot be acted on; the error says why
)

// ask holds a request for the operator: the request and its approval are
// recorded together, it waits up to limits.approval_wait, and only an
// approval whose row still matches its binding lets it run, once. For a
// tool, an approval the operator gave after an earlier identical call
// stopped waiting is a grant: the call runs once on it. A client request
// has no grants: the upstream is not waiting any more.
func (p *Pipeline) ask(ctx context.Context, r *Request, fwd Forwarder, d Decision, start ledger.CallStart) Result {
	st := &kinds[r.Kind]
	if n := r.Pending.Add(1); n > p.Limits.PendingApprovals {
		r.Pending.Add(-1)
		start.Decision, start.Reason = Deny.String(), "limit: pending_approvals"
		if _, err := p.commit(ctx, start); err != nil {
			p.log().Error("refused request not recorded", "server", r.Server, "name", r.Name, "err", err)
		}
		msg := fmt.Sprintf("mcp-guard: the call to %s needs the operator's approval, and %d calls already wait for it (limits.pending_approvals); try again after the operator decides", r.Server+"/"+r.Name, p.Limits.PendingApprovals)
		if r.Kind.client() {
			msg = fmt.Sprintf("mcp-guard: %s needs the operator's approval, and %d requests already wait for it (limits.pending_approvals); it was not relayed to the host", r.Name, p.Limits.PendingApprovals)
		}
		return Result{Status: HeldBack, Decision: d, Message: msg}
	}
	defer r.Pending.Add(-1)
	if st.grants {
		gctx, gcancel := context.WithTimeout(context.WithoutCancel(ctx), RecordTimeout)
		callID, grantID, err := p.Ledger.ConsumeGrant(gctx, start, approvals.Check)
		gcancel()
		if err == nil {
			p.log().Info("call runs on a grant", "approval", grantID, "call", callID, "server", r.Server, "name", r.Exposed)
			return p.forward(ctx, r, fwd, callID, d)
		}
		if !errors.Is(err, ledger.ErrNoGrant) {
			p.log().Error("grant lookup failed", "server", r.Server, "name", r.Exposed, "err", err)
		}
	}
	ap, err := approvals.New(approvals.Request{Server: r.Server, Tool: r.Name, PinDigest: start.PinDigest,
		Class: start.Class, Rule: d.Rule, Args: r.Args, Labels: d.FlowLabels})
	if err != nil {
		if r.Kind.client() {
			return Result{Status: NotRecorded, Decision: d, Message: fmt.Sprintf("the request was not relayed: %v", err)}
		}
		return Result{Status: NotRecorded, Decision: d, Message: fmt.Sprintf("mcp-guard: the call to %s was not made: %v", r.Server+"/"+r.Name, err)}
	}
	wait := p.Limits.ApprovalWait
	ap.ExpiresAt = p.now()().Add(wait)
	if st.grants {
		ap.ExpiresAt = ap.ExpiresAt.Add(p.Limits.GrantTTL)
		ap.GrantTTL = p.Limits.GrantTTL
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), RecordTimeout)
	callID, apID, err := p.Ledger.RecordAsk(rctx, start, ap)
	cancel()
	if err != nil {
		p.log().Error("ask not recorded, so not made", "server", r.Server, "name", r.Name, "err", err)
		return Result{Status: NotRecorded, Decision: d, Message: p.notMade(r, ErrNotRecorded)}
	}
	p.log().Warn("request waits for the operator", "approval", apID, "call", callID, "server", r.Server, "name", r.Name,
		"to_decide", fmt.Sprintf("mcp-guard approvals show %d", apID))
	askIn := "terminal"
	if p.AskIn != nil && kinds[r.Kind].hostAsk && r.AskHost != nil {
		askIn = p.AskIn(d.Rule)
	}
	if askIn != "host" {
		p.tellWaiting(r, apID)
	}
	hostDone := func() {}
	if askIn == "host" || askIn == "both" {
		hctx, hcancel := context.WithCancel(ctx)
		hostDone = hcancel
		fallback := func() {} // "both": Waiting has heard already
		if askIn == "host" {
			fallback = func() { p.tellWaiting(r, apID) } // the host will not decide: tell the operator after all
		}
		go p.askHost(hctx, r, apID, ap, fallback)
	}
	var progress func(int)
	if st.progress && r.Progress != nil {
		progress = func(n int) { r.Progress(n, apID) }
	}
	timeout := func(c context.Context) error { return p.Ledger.ReleaseCall(c, apID) }
	if !st.grants {
		timeout = func(c context.Context) error { return p.Ledger.CloseApproval(c, apID, ledger.ApprovalExpired) }
	}
	a, outcome, err := p.hold(ctx, apID, wait, progress, timeout, p.stillBound(ctx, r, d))
	hostDone() // the wait is over: the host's form is withdrawn before the call runs
	if outcome == heldApproved {
		p.log().Info("approved request forwarded", "approval", apID, "call", callID, "server", r.Server, "name", r.Name)
		return p.forward(ctx, r, fwd, callID, d)
	}
	res := Result{Status: HeldBack, Decision: d, CallID: callID, Message: heldMessage(r, outcome, a, apID, callID, wait, p.Limits.GrantTTL, err)}
	if d.FlowLabels != "" && outcome != heldDenied {
		// Say why it waited: the labels, since which call (F2).
		res.Message += " It waits because " + d.flowWhy
	}
	if outcome == heldWithdrawn {
		res.Status = Cancelled
	}
	if outcome == heldFailed {
		p.log().Error("approved request not made", "approval", apID, "call", callID, "server", r.Server, "name", r.Name, "err", err)
	}
	return res
}

// stillBound is what an approval is checked against when it is used: its
// row is untouched (approvals.Check), and the flow stage, run again on the
// scope's labels now, asks for exactly the label set the approval is bound
// to (F2): a label gained or declassified while the call waited voids it.
func (p *Pipeline) stillBound(ctx context.Context, r *Request, d Decision) func(ledger.Approval) error {
	return func(a ledger.Approval) error {
		if err := approvals.Check(a); err != nil {
			return err
		}
		if r.Kind.client() {
			return nil
		}
		now := p.flows(ctx, r, Decision{Outcome: Allow, Class: d.Class}, false)
		if (now.Outcome != Allow && now.Outcome != Ask) || now.FlowLabels != a.Labels {
			return fmt.Errorf("gate: approval %d is bound to the labels %q; the session now holds %q", a.ID, a.Labels, now.FlowLabels)
		}
		return nil
	}
}

// heldMessage is what the host (or upstream) reads of a request held for
// the operator and not made.
func heldMessage(r *Request, outcome held, a ledger.Approval, apID, callID int64, wait, grantTTL time.Duration, err error) string {
	if r.Kind.client() {
		method := r.Name
		switch outcome {
		case heldDenied:
			msg := fmt.Sprintf("mcp-guard: the operator denied %s (approval %d)", method, apID)
			if a.Reason != "" {
				msg += ": " + a.Reason
			}
			return msg
		case heldTimedOut:
			return fmt.Sprintf("mcp-guard: %s waited %s for the operator's approval (approval %d) and was not relayed to the host", method, wait, apID)
		case heldWithdrawn:
			return fmt.Sprintf("mcp-guard: %s was not relayed: the host's call that caused it ended while it waited for approval %d", method, apID)
		}
		return fmt.Sprintf("mcp-guard: %s was not relayed: %v", method, err)
	}
	name := r.Server + "/" + r.Name
	switch outcome {
	case heldWithdrawn:
		return fmt.Sprintf("mcp-guard: %s: cancelled by the host while waiting for approval %d", r.Exposed, apID)
	case heldTimedOut:
		return fmt.Sprintf("mcp-guard: the call to %s waited %s for the operator's approval and was not made. It is approval %d: once the operator approves it (mcp-guard approve %d), call again with exactly the same arguments within %s and it will run once.", name, wait, apID, apID, grantTTL)
	case heldDenied:
		msg := fmt.Sprintf("mcp-guard: the operator denied the call to %s (approval %d)", name, apID)
		if a.Reason != "" {
			msg += ": " + a.Reason
		}
		return msg
	}
	return fmt.Sprintf("mcp-guard: the call to %s was not made: %v (ledger call %d)", name, err, callID)
}

// hold waits for the operator's decision on approval apID, polling its row
// (decisions come from other processes through the ledger), until it is
// decided, ctx ends or wait passes. Only a row that still matches its
// binding is acted on, and an approval is used (its call moved to started)
// before hold returns heldApproved, so it runs once. progress, when not nil,
// is called about once a second while it waits; timeout ends the wait in
// the ledger when wait passes (an ErrConflict from it means the row was
// decided meanwhile, and that decision is read once more). The error of
// heldFailed names nothing local.
func (p *Pipeline) hold(ctx context.Context, apID int64, wait time.Duration, progress func(n int), timeout func(context.Context) error, use func(ledger.Approval) error) (ledger.Approval, held, error) {
	write := func(f func(context.Context) error) error {
		wctx, cancel := context.WithTimeout(context.Background(), RecordTimeout)
		defer cancel()
		return f(wctx)
	}
	end := func(to string) {
		err := write(func(c context.Context) error { return p.Ledger.CloseApproval(c, apID, to) })
		if err != nil && !errors.Is(err, ledger.ErrConflict) {
			p.log().Error("approval not closed", "approval", apID, "to", to, "err", err)
		}
	}
	now := p.now()
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	poll := time.NewTicker(askPoll)
	defer poll.Stop()
	lastProgress := now()
	timedOut := false
	for n := 1; ; {
		select {
		case <-ctx.Done():
			end(ledger.ApprovalWithdrawn)
			return ledger.Approval{}, heldWithdrawn, nil
		case <-deadline.C:
			err := write(timeout)
			if err == nil {
				return ledger.Approval{}, heldTimedOut, nil
			}
			if !errors.Is(err, ledger.ErrConflict) {
				p.log().Error("waiting request not released", "approval", apID, "err", err)
				return ledger.Approval{}, heldTimedOut, nil
			}
			timedOut = true // decided at the last moment: act on that decision
		case <-poll.C:
		}
		a, err := p.Ledger.Approval(context.WithoutCancel(ctx), apID)
		if err != nil {
			if timedOut {
				return ledger.Approval{}, heldTimedOut, nil
			}
			continue
		}
		if err := approvals.Check(a); err != nil {
			p.log().Error("approval row tampered with; not acted on", "approval", apID, "err", err)
			end(ledger.ApprovalExpired)
			return a, heldFailed, fmt.Errorf("approval %d was changed outside mcp-guard", apID)
		}
		switch a.State {
		case ledger.ApprovalPending:
			if timedOut {
				return a, heldTimedOut, nil
			}
			if progress != nil && now().Sub(lastProgress) >= time.Second {
				progress(n)
				n++
				lastProgress = now()
			}
			continue
		case ledger.ApprovalApproved:
			err := write(func(c context.Context) error { return p.Ledger.UseApproval(c, apID, use) })
			if err != nil {
				p.log().Error("approval not used", "approval", apID, "err", err)
				return a, heldFailed, fmt.Errorf("approval %d could not be used; the operator's log says why", apID)
			}
			return a, heldApproved, nil
		case ledger.ApprovalDenied:
			return a, heldDenied, nil
		default:
			return a, heldFailed, fmt.Errorf("approval %d is %s", apID, a.State)
		}
	}
}
