package ledger

import (
	"context"
	"errors"
	"testing"
	"time"
)

// Proves G1 (explain agrees with serve): a session's history is its own
// calls, oldest first, with the operator's resets placed among them by
// time; another session's calls are not in it.
func TestSessionHistory(t *testing.T) {
	ctx := context.Background()
	clock := newFakeClock(time.UnixMilli(1_700_000_000_000))
	l := openTest(t, "", Options{Now: clock.Now})
	if _, err := l.LatestSession(ctx); !errors.Is(err, ErrNotFound) {
		t.Fatalf("LatestSession on an empty ledger: %v", err)
	}
	a, b := startSession(t, l), startSession(t, l)
	if _, err := l.SessionHistory(ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("unknown session: %v", err)
	}
	rec := func(s *Session, tool, decision, reason string) int64 {
		t.Helper()
		clock.Add(time.Second)
		id, err := l.RecordCall(ctx, CallStart{SessionID: s.ID(), Server: "fs", Tool: tool, Args: []byte(`{"p":1}`), Decision: decision, Reason: reason})
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	first := rec(a, "read", "allow", "")
	rec(b, "other", "allow", "")
	clock.Add(time.Second)
	if err := l.RequestReset(ctx, "test"); err != nil {
		t.Fatal(err)
	}
	second := rec(a, "write", "deny", "limit: calls_per_session")
	clock.Add(time.Second)
	if err := l.RequestReset(ctx, "again"); err != nil {
		t.Fatal(err)
	}
	h, err := l.SessionHistory(ctx, a.ID())
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != 4 || h[0].ID != first || !h[1].Reset || h[2].ID != second || !h[3].Reset {
		t.Fatalf("history: %+v", h)
	}
	if e := h[2]; e.Kind != KindTool || e.Server != "fs" || e.Tool != "write" || e.Decision != "deny" ||
		e.Reason != "limit: calls_per_session" || e.ArgsDigest == "" || !e.At.Equal(clock.Now().Add(-time.Second)) {
		t.Fatalf("entry: %+v", e)
	}
	hb, err := l.SessionHistory(ctx, b.ID())
	if err != nil {
		t.Fatal(err)
	}
	if len(hb) != 3 || hb[0].Tool != "other" || !hb[1].Reset || !hb[2].Reset {
		t.Fatalf("other session's history: %+v", hb)
	}
	if id, err := l.LatestSession(ctx); err != nil || id != a.ID() {
		t.Fatalf("LatestSession = %q, %v; want %q", id, err, a.ID())
	}
}
