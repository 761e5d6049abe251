package ledger

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func openPinTest(t *testing.T) *Ledger {
	t.Helper()
	l, err := Open(context.Background(), t.TempDir()+"/ledger.db", Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func eventKinds(t *testing.T, l *Ledger) []string {
	t.Helper()
	evs, err := l.Events(context.Background(), 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range evs {
		kinds = append(kinds, e.Kind)
	}
	return kinds
}

// The pin state machine: tofu pins at first sight, a change withdraws until
// the operator accepts exactly what they were shown, a revert restores.
func TestPins_StateMachine(t *testing.T) {
	ctx := context.Background()
	l := openPinTest(t)
	p, err := l.ObservePin(ctx, "s", "t", "d1", []byte(`{"name":"t"}`), true)
	if err != nil || p.State != PinPinned || p.Digest != "d1" {
		t.Fatalf("first sight in tofu: %+v %v", p, err)
	}
	if p, _ = l.ObservePin(ctx, "s", "t", "d1", []byte(`{"name":"t"}`), true); p.State != PinPinned {
		t.Fatalf("same again: %+v", p)
	}
	p, _ = l.ObservePin(ctx, "s", "t", "d2", []byte(`{"name":"t","description":"x"}`), true)
	if p.State != PinChanged || p.Digest != "d1" || p.PendingDigest != "d2" {
		t.Fatalf("changed: %+v", p)
	}
	if err := l.AcceptPin(ctx, "s", "t", "d3"); !errors.Is(err, ErrStale) {
		t.Fatalf("accepting a digest that was not shown: %v, want ErrStale", err)
	}
	if err := l.AcceptPin(ctx, "s", "t", "d2"); err != nil {
		t.Fatal(err)
	}
	if p, _ = l.Pin(ctx, "s", "t"); p.State != PinPinned || p.Digest != "d2" || string(p.Raw) != `{"name":"t","description":"x"}` {
		t.Fatalf("after accept: %+v", p)
	}
	if err := l.AcceptPin(ctx, "s", "t", "d2"); err == nil {
		t.Fatal("accepting twice succeeded")
	}
	// A change then a revert restores the pin without the operator.
	l.ObservePin(ctx, "s", "t", "d9", nil, true)
	if p, _ = l.ObservePin(ctx, "s", "t", "d2", nil, true); p.State != PinPinned || p.PendingDigest != "" {
		t.Fatalf("revert: %+v", p)
	}
	// Reject keeps it withdrawn until the upstream goes back.
	l.ObservePin(ctx, "s", "t", "d5", []byte(`{}`), true)
	if err := l.RejectPin(ctx, "s", "t", "d5"); err != nil {
		t.Fatal(err)
	}
	if p, _ = l.ObservePin(ctx, "s", "t", "d5", []byte(`{}`), true); p.State != PinRejected {
		t.Fatalf("rejected definition seen again: %+v", p)
	}
	if p, _ = l.ObservePin(ctx, "s", "t", "d6", []byte(`{}`), true); p.State != PinChanged || p.PendingDigest != "d6" {
		t.Fatalf("a newer definition after a reject: %+v", p)
	}
	want := []string{"pin.added", "pin.changed", "pin.accepted", "pin.changed", "pin.restored", "pin.changed", "pin.rejected", "pin.changed"}
	got := eventKinds(t, l)
	if len(got) != len(want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("events %v, want %v", got, want)
		}
	}
	if rep, _ := l.Verify(ctx); !rep.OK {
		t.Fatalf("verify: %+v", rep)
	}
}

// In manual mode nothing is pinned without the operator.
func TestPins_ManualModeWaits(t *testing.T) {
	ctx := context.Background()
	l := openPinTest(t)
	p, _ := l.ObservePin(ctx, "s", "t", "d1", []byte(`{}`), false)
	if p.State != PinNew || p.Digest != "" || p.PendingDigest != "d1" {
		t.Fatalf("manual first sight: %+v", p)
	}
	if p, _ = l.ObservePin(ctx, "s", "t", "d2", []byte(`{}`), false); p.State != PinNew || p.PendingDigest != "d2" {
		t.Fatalf("manual, changed before acceptance: %+v", p)
	}
	if err := l.AcceptPin(ctx, "s", "t", "d1"); !errors.Is(err, ErrStale) {
		t.Fatalf("accepting the older definition: %v", err)
	}
	if err := l.AcceptPin(ctx, "s", "t", "d2"); err != nil {
		t.Fatal(err)
	}
	pins, _ := l.Pins(ctx, "")
	if len(pins) != 1 || pins[0].State != PinPinned {
		t.Fatalf("pins %+v", pins)
	}
}

func TestWatch_SeesAnotherLedgersCommit(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dir := t.TempDir()
	a, err := Open(ctx, dir+"/l.db", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := Open(ctx, dir+"/l.db", Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	ch, err := a.Watch(ctx, 20*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	b.ObservePin(ctx, "s", "t", "d", nil, true)
	select {
	case <-ch:
	case <-time.After(2 * time.Minute): // detects a hang, not slowness: a poll is 20ms
		t.Fatal("a commit by another ledger was not noticed")
	}
}

// A lazy write commits on its own after a short wait, or sooner together
// with the next Write; either way it is durable and in the chain.
func TestWriteLazy_CommitsAloneOrWithTheNextWrite(t *testing.T) {
	ctx := context.Background()
	l := openPinTest(t)
	start := time.Now()
	done := l.WriteLazy(func(tx *Tx) error {
		_, err := tx.AppendEvent("test.lazy", "t:1", map[string]any{"n": 1})
		return err
	})
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < lazyDelay/2 {
		t.Fatalf("a lone lazy write committed after %s, before waiting for company", d)
	}
	done = l.WriteLazy(func(tx *Tx) error {
		_, err := tx.AppendEvent("test.lazy", "t:2", map[string]any{"n": 2})
		return err
	})
	if err := l.Write(ctx, func(tx *Tx) error {
		_, err := tx.AppendEvent("test.eager", "t:3", map[string]any{"n": 3})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	default:
		t.Fatal("the lazy write did not commit with the Write queued after it")
	}
	if got := eventKinds(t, l); len(got) != 3 || got[1] != "test.lazy" || got[2] != "test.eager" {
		t.Fatalf("events %v", got)
	}
	if rep, _ := l.Verify(ctx); !rep.OK {
		t.Fatalf("verify: %+v", rep)
	}
}

// A grant is consumed only within its lifetime, only by the same server,
// tool, pin and canonical arguments, and once.
func TestGrants_LifetimeIdentityAndSingleUse(t *testing.T) {
	ctx := context.Background()
	var clock atomic.Int64 // the ledger's clock, in Unix nanoseconds: moved by the test
	clock.Store(time.Now().UnixNano())
	l := openTest(t, "", Options{Now: func() time.Time { return time.Unix(0, clock.Load()) }})
	sess, err := l.StartSession(ctx, SessionInfo{Kind: "test", Host: "t", PID: 1})
	if err != nil {
		t.Fatal(err)
	}
	start := CallStart{SessionID: sess.ID(), Server: "s", Tool: "t", PinDigest: "p", Args: []byte(`{"a":1}`), Decision: "ask", Rule: 1, Class: "write"}
	ok := func(Approval) error { return nil }
	grant := func(ttl time.Duration) int64 {
		_, id, err := l.RecordAsk(ctx, start, ApprovalStart{Presentation: "x", PresentationDigest: "pd", Binding: "b", ExpiresAt: time.Now().Add(time.Hour), GrantTTL: ttl})
		if err != nil {
			t.Fatal(err)
		}
		if err := l.ReleaseCall(ctx, id); err != nil {
			t.Fatal(err)
		}
		if err := l.DecideApproval(ctx, id, "pd", true, "", shownAs("pd")); err != nil {
			t.Fatal(err)
		}
		return id
	}
	grant(50 * time.Millisecond)
	clock.Add(int64(100 * time.Millisecond))
	if _, _, err := l.ConsumeGrant(ctx, start, ok); !errors.Is(err, ErrNoGrant) {
		t.Fatalf("an expired grant: %v, want ErrNoGrant", err)
	}
	id := grant(time.Hour)
	other := start
	other.Args = []byte(`{"a":2}`)
	if _, _, err := l.ConsumeGrant(ctx, other, ok); !errors.Is(err, ErrNoGrant) {
		t.Fatalf("other arguments: %v", err)
	}
	repinned := start
	repinned.PinDigest = "p2"
	if _, _, err := l.ConsumeGrant(ctx, repinned, ok); !errors.Is(err, ErrNoGrant) {
		t.Fatalf("another pin: %v", err)
	}
	same := start
	same.Args = []byte(`{ "a" : 1.0 }`) // the same canonical arguments
	if _, got, err := l.ConsumeGrant(ctx, same, ok); err != nil || got != id {
		t.Fatalf("the identical request: %d %v", got, err)
	}
	if _, _, err := l.ConsumeGrant(ctx, start, ok); !errors.Is(err, ErrNoGrant) {
		t.Fatalf("a second use: %v", err)
	}
}

// A server is seen once any pin of it is recorded, pending or not; a
// definition observed without a trust waits as new, and one observed with
// a trust is pinned, the event naming why.
func TestPins_ServerSeenAndTrust(t *testing.T) {
	ctx := context.Background()
	l := openPinTest(t)
	if seen, err := l.ServerSeen(ctx, "s"); err != nil || seen {
		t.Fatalf("fresh ledger: seen %v %v", seen, err)
	}
	if p, err := l.ObservePinAs(ctx, "s", "", "di", []byte(`""`), TrustNone); err != nil || p.State != PinNew {
		t.Fatalf("untrusted first sight: %+v %v", p, err)
	}
	if seen, err := l.ServerSeen(ctx, "s"); err != nil || !seen {
		t.Fatalf("after a pending pin: seen %v %v", seen, err)
	}
	if seen, _ := l.ServerSeen(ctx, "other"); seen {
		t.Fatal("another server is seen")
	}
	p, err := l.ObservePinAs(ctx, "s", "t", "d1", []byte(`{"name":"t"}`), TrustNewTools)
	if err != nil || p.State != PinPinned || p.Digest != "d1" {
		t.Fatalf("trusted first sight: %+v %v", p, err)
	}
	evs, _ := l.Events(ctx, 0, 100)
	if last := evs[len(evs)-1]; last.Kind != "pin.added" || !strings.Contains(string(last.Body), `"mode":"trust_new_tools"`) {
		t.Fatalf("last event %s %s", last.Kind, last.Body)
	}
}

// Two serve processes list a server for the first time at once: one sees
// it unknown (first contact) and the other, a moment later, sees it known
// and records its tool as new. The first contact's listing of the same
// definition pins it; a different definition stays new for the operator.
func TestPins_FirstContactRacePinsWhatItLists(t *testing.T) {
	ctx := context.Background()
	l := openPinTest(t)
	if p, err := l.ObservePinAs(ctx, "s", "t", "d1", []byte(`{"name":"t"}`), TrustNone); err != nil || p.State != PinNew {
		t.Fatalf("the other serve's sight: %+v %v", p, err)
	}
	p, err := l.ObservePinAs(ctx, "s", "t", "d1", []byte(`{"name":"t"}`), TrustFirstContact)
	if err != nil || p.State != PinPinned || p.Digest != "d1" || p.PendingDigest != "" {
		t.Fatalf("first contact listing the same definition: %+v %v", p, err)
	}
	if p, err := l.ObservePinAs(ctx, "s", "u", "d2", []byte(`{"name":"u"}`), TrustNone); err != nil || p.State != PinNew {
		t.Fatalf("the other serve's sight of u: %+v %v", p, err)
	}
	if p, err := l.ObservePinAs(ctx, "s", "u", "d3", []byte(`{"name":"u","description":"x"}`), TrustFirstContact); err != nil || p.State != PinNew || p.PendingDigest != "d3" {
		t.Fatalf("first contact listing another definition: %+v %v; want it new, pending d3", p, err)
	}
	if p, err := l.ObservePinAs(ctx, "s", "v", "d4", []byte(`{"name":"v"}`), TrustNone); err != nil || p.State != PinNew {
		t.Fatalf("v: %+v %v", p, err)
	}
	if p, err := l.ObservePinAs(ctx, "s", "v", "d4", []byte(`{"name":"v"}`), TrustNone); err != nil || p.State != PinNew {
		t.Fatalf("a later listing without trust pinned a new tool: %+v %v", p, err)
	}
	if r, err := l.Verify(ctx); err != nil || !r.OK {
		t.Fatalf("verify: %+v %v", r, err)
	}
}
