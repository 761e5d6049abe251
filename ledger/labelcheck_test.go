package ledger

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// IfLabels (the flow stage's check in the call's commit): a call decided on
// the labels its scope holds is recorded; one decided on labels another
// process changed since is not, and the error carries the labels held now.
// KnownScopeLabels lags another process's commits until a commit reads
// the scope again, never this process's own.
func TestRecordCall_IfLabels(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	l := openTest(t, path, Options{LeaseTTL: time.Hour})
	other := openTest(t, path, Options{LeaseTTL: time.Hour}) // a second serve of the scope
	s, o := startSession(t, l), startSession(t, other)
	for _, s := range []*Session{s, o} {
		if _, err := s.l.JoinScope(ctx, s.ID(), "host", time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	known := func(step string, want []string, wantFresh bool) []Label {
		t.Helper()
		ls, fresh, err := l.KnownScopeLabels(ctx, "host")
		if err != nil || !reflect.DeepEqual(labelNames(ls), want) || fresh != wantFresh {
			t.Fatalf("%s: KnownScopeLabels = %v fresh %v, %v; want %v fresh %v", step, labelNames(ls), fresh, err, want, wantFresh)
		}
		return ls
	}
	n := 0
	send := func(step string, decidedOn []Label, want []string) {
		t.Helper()
		n++
		before := countCalls(t, l)
		_, err := l.RecordCall(ctx, CallStart{SessionID: s.ID(), Server: "web", Tool: "fetch", Args: []byte(`{"n":` + string(rune('0'+n)) + `}`),
			Decision: "allow", Class: "network", IfLabels: &LabelsCheck{Scope: "host", Labels: decidedOn}})
		var changed *LabelsChangedError
		switch {
		case want == nil && err != nil:
			t.Fatalf("%s: RecordCall = %v, want it recorded", step, err)
		case want != nil && (!errors.As(err, &changed) || !errors.Is(err, ErrLabelsChanged) || !reflect.DeepEqual(labelNames(changed.Labels), want)):
			t.Fatalf("%s: RecordCall = %v, want the labels changed to %v", step, err, want)
		}
		if got, grew := countCalls(t, l), want == nil; (got == before+1) != grew {
			t.Fatalf("%s: %d calls after RecordCall, %d before", step, got, before)
		}
	}
	gain := func(led *Ledger, sess *Session, label string) {
		t.Helper()
		id, err := led.RecordCall(ctx, CallStart{SessionID: sess.ID(), Server: "fs", Tool: "read_file", Args: []byte(`{"path":"/home/me/` + label + `"}`), Decision: "allow", Class: "read"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := led.GainLabels(ctx, "host", sess.ID(), id, []string{label}); err != nil {
			t.Fatal(err)
		}
	}

	// Only an allowed call in a scope is the flow stage's to check.
	for _, c := range []CallStart{
		{SessionID: s.ID(), Server: "web", Tool: "fetch", Decision: "deny", IfLabels: &LabelsCheck{Scope: "host"}},
		{SessionID: s.ID(), Server: "web", Tool: "fetch", Decision: "allow", IfLabels: &LabelsCheck{}},
	} {
		if _, err := l.RecordCall(ctx, c); err == nil || !strings.Contains(err.Error(), "IfLabels") {
			t.Fatalf("IfLabels on %s in scope %q: %v", c.Decision, c.IfLabels.Scope, err)
		}
	}

	none := known("first", nil, true)
	known("again", nil, false)
	send("no labels", none, nil)

	gain(other, o, "private")
	stale := known("after another process's gain", nil, false) // lags
	send("decided before the other's gain", stale, []string{"private"})
	now := known("after the commit read them", []string{"private"}, false)
	send("decided on what the commit read", now, nil)

	gain(l, s, "untrusted") // our own: never lags
	now = known("after our own gain", []string{"private", "untrusted"}, true)
	send("decided after our own gain", now, nil)
	send("a label less than held", now[:1], []string{"private", "untrusted"})

	// The same label, brought by another call, is another label set.
	if _, err := other.Declassify(ctx, "host", "private", "test"); err != nil {
		t.Fatal(err)
	}
	gain(other, o, "private")
	send("private brought again by another call", now, []string{"private", "untrusted"})
	if again := known("caught up", []string{"private", "untrusted"}, false); again[0].CallID == now[0].CallID {
		t.Fatalf("private known as brought by call %d, the declassified one", again[0].CallID)
	}
}

// The labels are checked before L7: a call an interrupted identical call
// would hold for the operator, whose scope gained a label since it was
// decided, is decided again on the label (a flow may deny it) before L7
// asks.
func TestRecordCall_LabelsCheckedBeforeL7(t *testing.T) {
	ctx := context.Background()
	path := newClosedLedger(t)
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	crashedAt(t, path, t0.Add(-time.Minute), CallStart{Server: "web", Tool: "fetch", Args: []byte(`{"u":1}`)})
	l := openTest(t, path, Options{Now: func() time.Time { return t0 }})
	s := startSession(t, l)
	if _, err := l.JoinScope(ctx, s.ID(), "host", time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := l.RecoverInterrupted(ctx); err != nil {
		t.Fatal(err)
	}
	stale, _, err := l.KnownScopeLabels(ctx, "host")
	if err != nil {
		t.Fatal(err)
	}
	other := openTest(t, path, Options{Now: func() time.Time { return t0 }})
	o := startSession(t, other)
	read, err := other.RecordCall(ctx, CallStart{SessionID: o.ID(), Server: "fs", Tool: "read_file", Args: []byte(`{}`), Decision: "allow", Class: "read"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.GainLabels(ctx, "host", o.ID(), read, []string{"private"}); err != nil {
		t.Fatal(err)
	}
	c := CallStart{SessionID: s.ID(), Server: "web", Tool: "fetch", Args: []byte(`{"u":1}`), Decision: "allow", Class: "network",
		IfNotInterrupted: true, IfLabels: &LabelsCheck{Scope: "host", Labels: stale}}
	if _, err := l.RecordCall(ctx, c); !errors.Is(err, ErrLabelsChanged) || errors.Is(err, ErrInterrupted) {
		t.Fatalf("decided on stale labels: %v, want the labels changed", err)
	}
	var changed *LabelsChangedError
	errors.As(func() error { _, err := l.RecordCall(ctx, c); return err }(), &changed)
	c.IfLabels.Labels = changed.Labels
	if _, err := l.RecordCall(ctx, c); !errors.Is(err, ErrInterrupted) {
		t.Fatalf("decided on the labels held: %v, want L7's refusal", err)
	}
}

// What KnownScopeLabels read from the file is not kept when the labels
// known were forgotten while it read: a write of ours came in between.
func TestKnownLabels_ReadAcrossAForgetIsNotKept(t *testing.T) {
	var k knownLabels
	_, gen, ok := k.get("host")
	if ok {
		t.Fatal("known before any read")
	}
	k.afterCommit(true, nil) // a label op of ours committed during the read
	k.put("host", []Label{{Label: "old"}}, gen)
	if ls, _, ok := k.get("host"); ok {
		t.Fatalf("a read from before our write is known: %v", ls)
	}
	_, gen, _ = k.get("host")
	k.put("host", []Label{{Label: "new"}}, gen)
	if ls, _, ok := k.get("host"); !ok || ls[0].Label != "new" {
		t.Fatalf("a read after the write is not known: %v", ls)
	}
}
