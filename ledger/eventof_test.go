package ledger

import (
	"context"
	"path/filepath"
	"testing"
)

// CallEvent gives a call's decision event (its first) and its latest one,
// as Events holds them; none for a call never recorded.
func TestCallEvent(t *testing.T) {
	ctx := context.Background()
	l := openTest(t, filepath.Join(t.TempDir(), "l.db"), Options{})
	s := startSession(t, l)
	id, err := l.RecordCall(ctx, CallStart{SessionID: s.ID(), Server: "fs", Tool: "w", Args: []byte(`{}`), Decision: "allow"})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.RecordOutcome(ctx, id, Outcome{State: StateDone}); err != nil {
		t.Fatal(err)
	}
	evs, err := l.Events(ctx, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	hashes := map[int64]string{}
	for _, e := range evs {
		h, err := l.eventHashAt(ctx, e.Seq)
		if err != nil {
			t.Fatal(err)
		}
		hashes[e.Seq] = h
	}
	first, fh, ok, err := l.CallEvent(ctx, id, false)
	if err != nil || !ok || evs[first-1].Kind != "call.started" || hashes[first] != fh {
		t.Fatalf("first: seq %d hash %s ok %v err %v", first, fh, ok, err)
	}
	last, lh, ok, err := l.CallEvent(ctx, id, true)
	if err != nil || !ok || evs[last-1].Kind != "call.done" || hashes[last] != lh || lh == fh {
		t.Fatalf("last: seq %d hash %s ok %v err %v", last, lh, ok, err)
	}
	if _, _, ok, err := l.CallEvent(ctx, id+1, false); ok || err != nil {
		t.Fatalf("a call never recorded: ok %v err %v", ok, err)
	}
}

func (l *Ledger) eventHashAt(ctx context.Context, seq int64) (string, error) {
	var h string
	err := l.rdb.QueryRowContext(ctx, "SELECT hash FROM events WHERE seq = ?", seq).Scan(&h)
	return h, err
}
