package gate

import (
	"context"
	"fmt"
	"time"

	"github.com/mcp-guard/mcp-guard/classify"
	"github.com/mcp-guard/mcp-guard/ledger"
)

// WitnessWait bounds the witness stage's commit of the chain head.
const WitnessWait = 5 * time.Second

// witnessed is the witness stage: before a recorded call of class exec or
// destructive is forwarded, the chain head holding it is committed to the
// witnesses. ok is false when the call must not go on (the witness failed
// and ledger.witness_required is true); res is then the refusal, and the
// call's outcome in the ledger says why.
func (p *Pipeline) witnessed(ctx context.Context, r *Request, id int64, d Decision) (res Result, ok bool) {
	if p.Witness == nil || (d.Class != classify.Exec && d.Class != classify.Destructive) {
		return Result{}, true
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), WitnessWait)
	err := p.Witness(wctx, string(d.Class))
	cancel()
	if err == nil {
		return Result{}, true
	}
	if !p.WitnessRequired {
		p.log().Error("WITNESS FAILED before an "+string(d.Class)+" call: forwarded without its chain head witnessed (ledger.witness_required is false)",
			"id", id, "server", r.Server, "name", r.Exposed, "err", err)
		return Result{}, true
	}
	why := fmt.Sprintf("not forwarded: the chain head could not be committed to a witness before this %s call, and ledger.witness_required is true: %v", d.Class, err)
	p.recordLazy(id, ledger.Outcome{State: "failed", Err: why})
	p.log().Error("call refused: its chain head could not be witnessed", "id", id, "server", r.Server, "name", r.Exposed, "err", err)
	return Result{Status: Refused, Decision: d, CallID: id,
		Message: p.notMade(r, fmt.Sprintf("it was not made: mcp-guard could not commit the ledger's chain head to a witness first, and the operator requires that for %s calls (ledger call %d)", d.Class, id))}, false
}
