package gate

import (
	"context"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-guard/mcp-guard/config"
)

// Proves G1 (explain agrees with serve), in-process: before each request
// Run decides with the session serve keeps in memory, a session rebuilt
// from the ledger's history decides it in dry-run (Explain), with the same
// outcome, rule, class, reason and limit, through every limit decided
// before forwarding, a stop after refusals in a row and the operator's
// reset. Explain records and forwards nothing.
func TestPipeline_ExplainFromTheLedgerAgreesWithRun(t *testing.T) {
	ctx := context.Background()
	// One clock for the ledger, the pipeline and both sessions, a
	// millisecond later at each reading: the operator's reset is recorded
	// strictly before the next call, as it was made.
	base := time.Now()
	var ticks atomic.Int64
	clock := func() time.Time { return base.Add(time.Duration(ticks.Add(1)) * time.Millisecond) }
	pt := openPipeTestAt(t, filepath.Join(t.TempDir(), "ledger.db"), clock)
	lim := config.Limits{CallsPerSession: 9, CallsPerToolPerMinute: 3, IdenticalCallRepeats: 2, ConsecutiveDenials: 3}
	live := pt.p.Gate.NewSession(lim, clock)
	fwd := &forwarder{res: `{"content":[]}`}
	type step struct {
		kind    Kind
		name    string
		args    string
		reset   bool // the operator's reset before this request
		stale   bool // the host's listing is not current any more
		outcome Outcome
		limit   string
	}
	steps := []step{
		{kind: KindTool, name: "read_file", args: `{"p":1}`, outcome: Allow},
		{kind: KindTool, name: "read_file", args: `{"p":1}`, outcome: Allow},
		{kind: KindTool, name: "read_file", args: `{"p":1}`, outcome: Deny, limit: LimitIdenticalRepeats},
		{kind: KindTool, name: "read_file", args: `{"p":2}`, outcome: Allow},
		{kind: KindTool, name: "read_file", args: `{"p":3}`, outcome: Deny, limit: LimitCallsPerToolMinute},
		{kind: KindTool, name: "read_file", args: `{"p":3}`, stale: true},
		{kind: KindTool, name: "move_file", args: `{}`, outcome: Ask}, // refused as pending_approvals, counted
		{kind: KindPrompt, name: "greet", args: `{"who":"me"}`, outcome: Allow},
		{kind: KindResource, name: "file:///pub/a", outcome: Allow},
		{kind: KindResource, name: "file:///pub/a", outcome: Allow},
		{kind: KindResource, name: "file:///pub/a", outcome: Deny, limit: LimitIdenticalRepeats},
		{kind: KindTool, name: "delete_file", args: `{}`, outcome: Deny},
		{kind: KindTool, name: "write_file", args: `{"a":1,"a":2}`, outcome: Invalid},
		{kind: KindTool, name: "write_file", args: `{}`, outcome: Refuse, limit: LimitConsecutiveDenials},
		{kind: KindTool, name: "write_file", args: `{"x":1}`, reset: true, outcome: Allow},
		{kind: KindTool, name: "write_file", args: `{"x":2}`, outcome: Allow},
		{kind: KindTool, name: "write_file", args: `{"x":3}`, outcome: Deny, limit: LimitCallsPerSession},
	}
	for i, s := range steps {
		if s.reset {
			if err := pt.l.RequestReset(ctx, "test"); err != nil {
				t.Fatal(err)
			}
			live.Reset()
		}
		h, err := pt.l.SessionHistory(ctx, pt.sess.ID())
		if err != nil {
			t.Fatal(err)
		}
		mk := func(sess *Session) *Request {
			r := pt.request(s.kind, s.name, s.args)
			r.Session = sess
			r.Pending.Store(int64(pt.p.Limits.PendingApprovals)) // an ask is refused at once, not held
			if s.stale {
				r.PinDigest = "the pin of an older definition"
			}
			return r
		}
		before := pt.rows()
		ex, start := pt.p.Explain(ctx, mk(pt.p.Gate.SessionFromHistory(lim, clock, h)))
		if pt.rows() != before {
			t.Fatalf("step %d: Explain recorded a row", i)
		}
		n := fwd.n.Load()
		run := pt.p.Run(ctx, mk(live), fwd)
		if ex.Decision.Outcome != run.Decision.Outcome || ex.Decision.Rule != run.Decision.Rule || ex.Decision.Class != run.Decision.Class ||
			ex.Decision.Reason != run.Decision.Reason || ex.Decision.Limit != run.Decision.Limit || ex.Decision.Stage != run.Decision.Stage {
			t.Fatalf("step %d %s: explain %+v, run %+v", i, s.name, ex.Decision, run.Decision)
		}
		if s.stale {
			if ex.Status != Withdrawn || run.Status != Withdrawn || start.Decision != "unknown_tool" {
				t.Fatalf("step %d: stale listing: explain %v (%+v), run %v", i, ex.Status, start, run.Status)
			}
			continue
		}
		if ex.Decision.Outcome != s.outcome || ex.Decision.Limit != s.limit {
			t.Fatalf("step %d %s: decided %s (limit %q), want %s (limit %q)", i, s.name, ex.Decision.Outcome, ex.Decision.Limit, s.outcome, s.limit)
		}
		stage := StageRules
		switch {
		case s.limit != "":
			stage = StageLimits
		case s.outcome == Invalid:
			stage = StageReading
		}
		if ex.Decision.Stage != stage {
			t.Fatalf("step %d %s: decided by %q, want %q", i, s.name, ex.Decision.Stage, stage)
		}
		if start.Decision != s.outcome.String() || start.Reason != run.Decision.Reason {
			t.Fatalf("step %d: would record %+v", i, start)
		}
		if forwarded := fwd.n.Load() > n; forwarded != (s.outcome == Allow) {
			t.Fatalf("step %d: forwarded %v", i, forwarded)
		}
	}
}
