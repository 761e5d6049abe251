package ledger

import (
	"context"
	"strings"
	"testing"
)

// tamperCase builds a 10-event chain, closes it, tampers with a plain
// connection, reopens and verifies.
func verifyAfter(t *testing.T, tamper func(t *testing.T, l *Ledger, path string)) VerifyReport {
	t.Helper()
	path := newClosedLedger(t) // holds one event
	l := openTest(t, path, Options{})
	appendEvents(t, l, 9)
	rep, err := l.Verify(context.Background())
	if err != nil || !rep.OK || rep.Events != 10 {
		t.Fatalf("before tampering: %+v, %v", rep, err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	tamper(t, l, path)
	l = openTest(t, path, Options{})
	rep, err = l.Verify(context.Background())
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	return rep
}

func wantBad(t *testing.T, rep VerifyReport, seq int64, problem string) {
	t.Helper()
	if rep.OK || rep.BadSeq != seq || !strings.Contains(rep.Problem, problem) {
		t.Fatalf("report %+v, want bad seq %d with problem containing %q", rep, seq, problem)
	}
}

// Proves L3: an untouched chain verifies (the allow path).
func TestVerifyGoodChain(t *testing.T) {
	rep := verifyAfter(t, func(*testing.T, *Ledger, string) {})
	if !rep.OK || rep.Events != 10 || rep.BadSeq != 0 || rep.Problem != "" {
		t.Fatalf("good chain: %+v", rep)
	}
}

// Proves L3: an edited body is detected at its seq.
func TestVerifyDetectsEdit(t *testing.T) {
	rep := verifyAfter(t, func(t *testing.T, _ *Ledger, path string) {
		mustExec(t, plainDB(t, path), `UPDATE events SET body = CAST('{"n":99}' AS BLOB) WHERE seq = 5`)
	})
	wantBad(t, rep, 5, "edited: hash mismatch")
}

// Proves L3: a re-spaced (semantically equal) body is still an edit.
func TestVerifyDetectsNonCanonicalEdit(t *testing.T) {
	rep := verifyAfter(t, func(t *testing.T, _ *Ledger, path string) {
		mustExec(t, plainDB(t, path), `UPDATE events SET body = CAST('{ "n": 5 }' AS BLOB) WHERE seq = 5`)
	})
	wantBad(t, rep, 5, "edited: body is not in canonical form")
}

// Proves L3: a deleted middle row is detected, naming the missing seq.
func TestVerifyDetectsDelete(t *testing.T) {
	rep := verifyAfter(t, func(t *testing.T, _ *Ledger, path string) {
		mustExec(t, plainDB(t, path), `DELETE FROM events WHERE seq = 5`)
	})
	wantBad(t, rep, 5, "deleted: seq 5 is missing")
}

// Proves L3: a forged row inserted in the middle (later rows renumbered, the
// forged row's own hash correct, the head updated) breaks the next link.
func TestVerifyDetectsInsert(t *testing.T) {
	rep := verifyAfter(t, func(t *testing.T, l *Ledger, path string) {
		db := plainDB(t, path)
		mustExec(t, db, `UPDATE events SET seq = seq + 1000 WHERE seq >= 5`)
		mustExec(t, db, `UPDATE events SET seq = seq - 999 WHERE seq >= 1005`)
		var prev string
		if err := db.QueryRow(`SELECT hash FROM events WHERE seq = 4`).Scan(&prev); err != nil {
			t.Fatal(err)
		}
		body := []byte(`{"forged":true}`)
		h, err := eventHash(5, 1, "test.event", "test", body, prev)
		if err != nil {
			t.Fatal(err)
		}
		mustExec(t, db, `INSERT INTO events (seq, at, kind, subject, body, prev_hash, hash) VALUES (5, 1, 'test.event', 'test', ?, ?, ?)`, body, prev, h)
		mustExec(t, db, `UPDATE chain_head SET seq = 11, hash = (SELECT hash FROM events WHERE seq = 11)`)
	})
	wantBad(t, rep, 6, "prev link broken")
}

// Proves L3: two rows swapped (their seqs exchanged) are detected at the
// first of them.
func TestVerifyDetectsReorder(t *testing.T) {
	rep := verifyAfter(t, func(t *testing.T, _ *Ledger, path string) {
		db := plainDB(t, path)
		mustExec(t, db, `UPDATE events SET seq = -3 WHERE seq = 3`)
		mustExec(t, db, `UPDATE events SET seq = 3 WHERE seq = 4`)
		mustExec(t, db, `UPDATE events SET seq = 4 WHERE seq = -3`)
	})
	wantBad(t, rep, 3, "prev link broken")
}

// Proves L3: deleting the last row (truncation) is detected through the
// chain head.
func TestVerifyDetectsTruncation(t *testing.T) {
	rep := verifyAfter(t, func(t *testing.T, _ *Ledger, path string) {
		mustExec(t, plainDB(t, path), `DELETE FROM events WHERE seq = 10`)
	})
	wantBad(t, rep, 10, "truncated: the chain head says the last event is seq 10, but the last row is seq 9")
}

// Proves L3: a row appended outside mcp-guard (head not updated) is
// detected.
func TestVerifyDetectsAppendBehindHead(t *testing.T) {
	rep := verifyAfter(t, func(t *testing.T, _ *Ledger, path string) {
		db := plainDB(t, path)
		var prev string
		if err := db.QueryRow(`SELECT hash FROM events WHERE seq = 10`).Scan(&prev); err != nil {
			t.Fatal(err)
		}
		body := []byte(`{}`)
		h, _ := eventHash(11, 1, "x", "y", body, prev)
		mustExec(t, db, `INSERT INTO events (seq, at, kind, subject, body, prev_hash, hash) VALUES (11, 1, 'x', 'y', ?, ?, ?)`, body, prev, h)
	})
	wantBad(t, rep, 11, "the chain head says the last event is seq 10")
}
