package ledger

import (
	"context"
	"errors"
	"testing"
	"time"
)

// L7 asked in the call's own commit (IfNotInterrupted) says what
// WasInterrupted, reading the ledger, says: at each step below, an allowed
// call with the same key is recorded exactly when WasInterrupted is false,
// and nothing is recorded when it is true. The writer's set of interrupted
// calls follows our own writes (a recovery, an approved re-run) and
// another process's (a recovery it makes after ours loaded the set).
func TestRecordCall_IfNotInterrupted(t *testing.T) {
	ctx := context.Background()
	path := newClosedLedger(t)
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	crashedAt(t, path, t0.Add(-time.Minute),
		CallStart{Server: "fs", Tool: "write", Args: []byte(`{"p":1}`)},
		CallStart{Server: "fs", Tool: "write", Args: []byte(`{"p":2}`)})

	l := openTest(t, path, Options{Now: func() time.Time { return t0 }})
	s := startSession(t, l)
	call := func(args string) CallStart {
		return CallStart{SessionID: s.ID(), Server: "fs", Tool: "write", Args: []byte(args), Decision: "allow", Class: "write", IfNotInterrupted: true}
	}
	check := func(step, args string, want bool) {
		t.Helper()
		again, err := l.WasInterrupted(ctx, "fs", "write", []byte(args))
		if err != nil || again != want {
			t.Fatalf("%s: WasInterrupted(%s) = %v %v, want %v", step, args, again, err, want)
		}
		before := countCalls(t, l)
		_, err = l.RecordCall(ctx, call(args))
		if want != errors.Is(err, ErrInterrupted) || (!want && err != nil) {
			t.Fatalf("%s: RecordCall(%s) = %v, want interrupted %v", step, args, err, want)
		}
		if got, grew := countCalls(t, l), !want; (got == before+1) != grew {
			t.Fatalf("%s: %d calls after RecordCall(%s), %d before", step, got, args, before)
		}
	}

	check("before recovery", `{"p":1}`, false) // the writer's set is loaded, empty
	if _, err := l.RecoverInterrupted(ctx); err != nil {
		t.Fatal(err)
	}
	check("after our recovery", `{"p":2}`, true)
	check("other arguments", `{"p":3}`, false)

	// An approved re-run of {"p":2} (an ask that started) resolves it.
	_, approval, err := l.RecordAsk(ctx, CallStart{SessionID: s.ID(), Server: "fs", Tool: "write", Args: []byte(`{"p":2}`), Decision: "ask", Class: "write"},
		ApprovalStart{Presentation: "p", PresentationDigest: "pd", Binding: "b", ExpiresAt: t0.Add(time.Hour), GrantTTL: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	check("asked, not run", `{"p":2}`, true)
	if err := l.DecideApproval(ctx, approval, "pd", true, "", shownAs("pd")); err != nil {
		t.Fatal(err)
	}
	if err := l.UseApproval(ctx, approval, func(Approval) error { return nil }); err != nil {
		t.Fatal(err)
	}
	check("run again with approval", `{"p":2}`, false)

	// Another process marks our session's calls interrupted (its clock
	// says our lease lapsed) after our set was loaded.
	check("loads the set", `{"p":4}`, false)
	other := openTest(t, path, Options{Now: func() time.Time { return t0.Add(time.Hour) }})
	if _, err := other.RecoverInterrupted(ctx); err != nil {
		t.Fatal(err)
	}
	check("after another process's recovery", `{"p":4}`, true)
}

func countCalls(t *testing.T, l *Ledger) int {
	t.Helper()
	cs, err := l.Calls(context.Background(), CallFilter{Limit: maxLimit})
	if err != nil {
		t.Fatal(err)
	}
	return len(cs)
}
