package ledger

import (
	"context"
	"slices"
	"testing"
	"time"
)

// Proves L7 (crash recovery): a call left started by a session whose
// heartbeat is older than LeaseTTL, and one whose session ended, are marked
// interrupted with one event each; a call of a live session is not.
func TestRecoverInterrupted(t *testing.T) {
	ctx := context.Background()
	path := newClosedLedger(t)
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

	// A process that crashed a minute ago: its Ledger is closed (heartbeats
	// stop) without ending the session.
	deadCall := crashedAt(t, path, t0.Add(-time.Minute), CallStart{Server: "s", Tool: "t"})[0]

	clock := newFakeClock(t0)
	l := openTest(t, path, Options{Now: clock.Now, LeaseTTL: 15 * time.Second})
	live := startSession(t, l)
	liveCall, err := l.RecordCall(ctx, CallStart{SessionID: live.ID(), Server: "s", Tool: "t", Decision: "allow"})
	if err != nil {
		t.Fatal(err)
	}
	ended := startSession(t, l)
	endedCall, err := l.RecordCall(ctx, CallStart{SessionID: ended.ID(), Server: "s", Tool: "t", Decision: "allow"})
	if err != nil {
		t.Fatal(err)
	}
	if err := ended.End(ctx); err != nil {
		t.Fatal(err)
	}
	clock.Add(10 * time.Second) // live's lease (heartbeat at t0) has not lapsed

	ids, err := l.RecoverInterrupted(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids, []int64{deadCall, endedCall}) {
		t.Fatalf("recovered %v, want [%d %d]", ids, deadCall, endedCall)
	}
	for _, id := range ids {
		row, err := l.Call(ctx, id)
		if err != nil || row.State != StateInterrupted || row.EndedAt.IsZero() || row.Err == "" || row.DecodeError != "" {
			t.Fatalf("call %d: %+v %v", id, row, err)
		}
		if n := countRows(t, l.rdb, `SELECT count(*) FROM events WHERE kind = 'call.interrupted' AND subject = ?`, callSubject(id)); n != 1 {
			t.Fatalf("call %d: %d interrupted events", id, n)
		}
	}
	if row, _ := l.Call(ctx, liveCall); row.State != StateStarted {
		t.Fatalf("live call is %q", row.State)
	}
	// Idempotent: nothing more to recover.
	if ids, err := l.RecoverInterrupted(ctx); err != nil || len(ids) != 0 {
		t.Fatalf("second recovery: %v %v", ids, err)
	}
	// An outcome for an interrupted call conflicts; a late outcome is kept.
	if err := l.RecordOutcome(ctx, deadCall, Outcome{State: StateDone}); err == nil {
		t.Fatal("outcome for interrupted call accepted")
	}
	if err := l.RecordLateOutcome(ctx, deadCall, Outcome{State: StateDone, ResultBytes: 3}); err != nil {
		t.Fatal(err)
	}
	rep, err := l.Verify(ctx)
	if err != nil || !rep.OK {
		t.Fatalf("verify: %+v %v", rep, err)
	}
}

// Proves the lease is renewed: with LeaseTTL 300ms the heartbeat moves
// heartbeat_at forward, and stops after End.
func TestHeartbeatRenewsLease(t *testing.T) {
	l := openTest(t, "", Options{LeaseTTL: 300 * time.Millisecond})
	s := startSession(t, l)
	hb := func() int64 {
		return countRows(t, l.rdb, `SELECT heartbeat_at FROM sessions WHERE id = ?`, s.ID())
	}
	first := hb()
	deadline := time.Now().Add(10 * time.Second)
	for hb() == first {
		if time.Now().After(deadline) {
			t.Fatal("heartbeat never renewed the lease")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := s.End(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := s.End(context.Background()); err != nil {
		t.Fatalf("second End: %v", err)
	}
	if n := countRows(t, l.rdb, `SELECT count(*) FROM sessions WHERE id = ? AND ended_at IS NOT NULL`, s.ID()); n != 1 {
		t.Fatal("session not ended")
	}
}

// A call a dead session left waiting for the operator is never forwarded by
// anyone: recovery refuses it (one "approval.released" event) and leaves its
// approval pending, so the operator may still approve it as a grant that an
// identical re-issue uses once. A live session's waiting call is left alone.
func TestRecoverReleasesOrphanedAsks(t *testing.T) {
	ctx := context.Background()
	path := newClosedLedger(t)
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	ask := func(l *Ledger, s *Session, args string) (int64, int64) {
		t.Helper()
		c, a, err := l.RecordAsk(ctx, CallStart{SessionID: s.ID(), Server: "s", Tool: "t", Decision: "ask", Args: []byte(args)},
			ApprovalStart{Presentation: "p", PresentationDigest: "pd", Binding: "b", ExpiresAt: t0.Add(time.Hour), GrantTTL: 10 * time.Minute})
		if err != nil {
			t.Fatal(err)
		}
		return c, a
	}
	dead, err := Open(ctx, path, Options{Now: func() time.Time { return t0.Add(-time.Minute) }})
	if err != nil {
		t.Fatal(err)
	}
	deadCall, deadApproval := ask(dead, startSession(t, dead), `{"n":1}`)
	dead.Close()

	clock := newFakeClock(t0)
	l := openTest(t, path, Options{Now: clock.Now, LeaseTTL: 15 * time.Second})
	liveCall, _ := ask(l, startSession(t, l), `{"n":2}`)
	ended := startSession(t, l)
	endedCall, _ := ask(l, ended, `{"n":3}`)
	if err := ended.End(ctx); err != nil {
		t.Fatal(err)
	}
	clock.Add(10 * time.Second)

	if ids, err := l.RecoverInterrupted(ctx); err != nil || len(ids) != 0 {
		t.Fatalf("recovery: interrupted %v, %v; a waiting call never ran, so none is interrupted", ids, err)
	}
	for _, id := range []int64{deadCall, endedCall} {
		row, err := l.Call(ctx, id)
		if err != nil || row.State != StateRefused || row.EndedAt.IsZero() || row.Reason == "" {
			t.Fatalf("call %d: %+v %v", id, row, err)
		}
	}
	if n := countRows(t, l.rdb, `SELECT count(*) FROM events WHERE kind = 'approval.released'`); n != 2 {
		t.Fatalf("%d approval.released events, want 2", n)
	}
	if row, _ := l.Call(ctx, liveCall); row.State != StateWaiting {
		t.Fatalf("the live session's call is %q", row.State)
	}
	if ids, err := l.RecoverInterrupted(ctx); err != nil || len(ids) != 0 ||
		countRows(t, l.rdb, `SELECT count(*) FROM events WHERE kind = 'approval.released'`) != 2 {
		t.Fatalf("second recovery: %v %v", ids, err)
	}
	// The operator approves the dead session's ask: an identical re-issue runs once on it.
	a, err := l.Approval(ctx, deadApproval)
	if err != nil || a.State != ApprovalPending {
		t.Fatalf("approval %+v %v", a, err)
	}
	noCheck := func(Approval) error { return nil }
	if err := l.DecideApproval(ctx, deadApproval, "pd", true, "", shownAs("pd")); err != nil {
		t.Fatal(err)
	}
	again := CallStart{SessionID: startSession(t, l).ID(), Server: "s", Tool: "t", Decision: "ask", Args: []byte(`{"n":1}`)}
	if _, used, err := l.ConsumeGrant(ctx, again, noCheck); err != nil || used != deadApproval {
		t.Fatalf("identical re-issue: grant %d, %v", used, err)
	}
	if _, _, err := l.ConsumeGrant(ctx, again, noCheck); err == nil {
		t.Fatal("the grant was used twice")
	}
	if rep, err := l.Verify(ctx); err != nil || !rep.OK {
		t.Fatalf("verify: %+v %v", rep, err)
	}
}
