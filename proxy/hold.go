package proxy

import (
	"context"
	"errors"
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

// hold waits for the operator's decision on approval apID, polling its row
// (decisions come from other processes through the ledger), until it is
// decided, ctx ends or wait passes. Only a row that still matches its
// binding is acted on, and an approval is used (its call moved to started)
// before hold returns heldApproved, so it runs once. progress, when not nil,
// is called about once a second while it waits; timeout ends the wait in
// the ledger when wait passes (an ErrConflict from it means the row was
// decided meanwhile, and that decision is read once more).
func (p *Proxy) hold(ctx context.Context, apID int64, wait time.Duration, progress func(n int), timeout func(context.Context) error) (ledger.Approval, held, error) {
	write := func(f func(context.Context) error) error {
		wctx, cancel := context.WithTimeout(context.Background(), recordTimeout)
		defer cancel()
		return f(wctx)
	}
	end := func(to string) {
		err := write(func(c context.Context) error { return p.opts.Ledger.CloseApproval(c, apID, to) })
		if err != nil && !errors.Is(err, ledger.ErrConflict) {
			p.log.Error("approval not closed", "approval", apID, "to", to, "err", err)
		}
	}
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	poll := time.NewTicker(askPoll)
	defer poll.Stop()
	lastProgress := time.Now()
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
				p.log.Error("waiting request not released", "approval", apID, "err", err)
				return ledger.Approval{}, heldTimedOut, nil
			}
			timedOut = true // decided at the last moment: act on that decision
		case <-poll.C:
		}
		a, err := p.opts.Ledger.Approval(context.WithoutCancel(ctx), apID)
		if err != nil {
			if timedOut {
				return ledger.Approval{}, heldTimedOut, nil
			}
			continue
		}
		if err := approvals.Check(a); err != nil {
			p.log.Error("approval row tampered with; not acted on", "approval", apID, "err", err)
			end(ledger.ApprovalExpired)
			return a, heldFailed, hostSafef("approval %d was changed outside mcp-guard", apID)
		}
		switch a.State {
		case ledger.ApprovalPending:
			if timedOut {
				return a, heldTimedOut, nil
			}
			if progress != nil && time.Since(lastProgress) >= time.Second {
				progress(n)
				n++
				lastProgress = time.Now()
			}
			continue
		case ledger.ApprovalApproved:
			err := write(func(c context.Context) error { return p.opts.Ledger.UseApproval(c, apID, approvals.Check) })
			if err != nil {
				p.log.Error("approval not used", "approval", apID, "err", err)
				return a, heldFailed, hostSafef("approval %d could not be used; the operator's log says why", apID)
			}
			return a, heldApproved, nil
		case ledger.ApprovalDenied:
			return a, heldDenied, nil
		default:
			return a, heldFailed, hostSafef("approval %d is %s", apID, a.State)
		}
	}
}
