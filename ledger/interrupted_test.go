package ledger

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
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

	// Only an allowed call is L7's to check: an ask or a grant is refused.
	for _, d := range []string{"ask", "grant", "deny"} {
		c := call(`{"p":1}`)
		c.Decision = d
		if _, err := l.RecordCall(ctx, c); err == nil || !strings.Contains(err.Error(), "IfNotInterrupted") {
			t.Fatalf("IfNotInterrupted on a %s call: %v", d, err)
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

// A random walk of what changes L7's answer (crashes, recoveries by this
// process and another, late answers, approved re-runs, outcomes) never
// finds the commit's check and WasInterrupted disagreeing about a key.
func TestIfNotInterruptedAgreesWithWasInterrupted(t *testing.T) {
	ctx := context.Background()
	path := newClosedLedger(t)
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	now := func() time.Time { return t0.Add(time.Hour) }
	l := openTest(t, path, Options{Now: now})
	other := openTest(t, path, Options{Now: now})
	s := startSession(t, l)
	keys := []string{`{"k":0}`, `{"k":1}`}
	rng := rand.New(rand.NewPCG(14, 7))
	var started []int64 // l's calls not ended yet
	answers := map[bool]int{}
	for step := range 300 {
		k := keys[rng.IntN(len(keys))]
		c := CallStart{SessionID: s.ID(), Server: "fs", Tool: "write", Args: []byte(k), Decision: "allow", Class: "write"}
		switch op := rng.IntN(6); op {
		case 0: // a process that crashed an hour ago left the call started
			crashedAt(t, path, t0, c)
		case 1, 2: // a recovery, by this process or another
			if _, err := []*Ledger{l, other}[op-1].RecoverInterrupted(ctx); err != nil {
				t.Fatal(err)
			}
		case 3: // a late answer to an interrupted call with this key
			if ids := interruptedCalls(t, l, k); len(ids) > 0 {
				if err := other.RecordLateOutcome(ctx, ids[0], Outcome{State: StateDone}); err != nil {
					t.Fatal(err)
				}
			}
		case 4: // the operator approves an ask for it, and it runs
			a := c
			a.Decision = "ask"
			_, ap, err := l.RecordAsk(ctx, a, ApprovalStart{Presentation: "p", PresentationDigest: "pd", Binding: "b", ExpiresAt: now().Add(time.Hour), GrantTTL: time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			if err := other.DecideApproval(ctx, ap, "pd", true, "", shownAs("pd")); err != nil {
				t.Fatal(err)
			}
			if err := l.UseApproval(ctx, ap, func(Approval) error { return nil }); err != nil {
				t.Fatal(err)
			}
		case 5: // an allowed call ends
			if len(started) > 0 {
				if err := l.RecordOutcome(ctx, started[0], Outcome{State: StateDone}); err != nil {
					t.Fatal(err)
				}
				started = started[1:]
			}
		}
		// Then the check, for any key.
		k = keys[rng.IntN(len(keys))]
		want, err := l.WasInterrupted(ctx, "fs", "write", []byte(k))
		if err != nil {
			t.Fatal(err)
		}
		c.Args, c.IfNotInterrupted = []byte(k), true
		id, err := l.RecordCall(ctx, c)
		if got := errors.Is(err, ErrInterrupted); got != want || (!want && err != nil) {
			t.Fatalf("step %d, %s: the commit says interrupted %v (%v), the ledger %v", step, k, got, err, want)
		}
		if err == nil {
			started = append(started, id)
		}
		answers[want]++
	}
	t.Logf("checked %d interrupted keys and %d others", answers[true], answers[false])
	if answers[true] < 10 || answers[false] < 10 {
		t.Fatalf("the walk checked %d interrupted keys and %d others: too few of one to show anything", answers[true], answers[false])
	}
}

// interruptedCalls are the ids of the interrupted calls with args k and no
// late answer.
func interruptedCalls(t *testing.T, l *Ledger, k string) []int64 {
	t.Helper()
	cs, err := l.Calls(context.Background(), CallFilter{State: StateInterrupted, Limit: maxLimit})
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, c := range cs {
		if string(c.Args) == k && c.Late == nil {
			ids = append(ids, c.ID)
		}
	}
	return ids
}
