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

// labelNames is the names of ls.
func labelNames(ls []Label) []string {
	var out []string
	for _, l := range ls {
		out = append(out, l.Label)
	}
	return out
}

// Proves F1/F3 in the ledger: labels gained under a scope are read by every
// session of it (another Ledger on the same file too), keep the call that
// first brought them, leave only by declassify (recorded), and every row
// is bound: Verify passes, and an edited or deleted label row is named.
func TestScopeLabels(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "ledger.db")
	l := openTest(t, path, Options{LeaseTTL: time.Hour})
	other := openTest(t, path, Options{LeaseTTL: time.Hour}) // a second serve process
	s1, s2 := startSession(t, l), startSession(t, other)
	for _, s := range []*Session{s1, s2} {
		if ended, err := s.l.JoinScope(ctx, s.ID(), "claude", time.Minute); err != nil || ended != nil {
			t.Fatalf("join: %v, %v", ended, err)
		}
	}
	read, err := l.RecordCall(ctx, CallStart{SessionID: s1.ID(), Server: "fs", Tool: "read_file", Args: []byte(`{"path":"/home/me/taxes.md"}`), Decision: "allow", Class: "read"})
	if err != nil {
		t.Fatal(err)
	}
	gained, err := l.GainLabels(ctx, "claude", s1.ID(), read, []string{"private", "untrusted"})
	if err != nil || !reflect.DeepEqual(gained, []string{"private", "untrusted"}) {
		t.Fatalf("gain: %v, %v", gained, err)
	}
	again, err := l.RecordCall(ctx, CallStart{SessionID: s1.ID(), Server: "fs", Tool: "read_file", Args: []byte(`{}`), Decision: "allow", Class: "read"})
	if err != nil {
		t.Fatal(err)
	}
	if gained, err := l.GainLabels(ctx, "claude", s1.ID(), again, []string{"private"}); err != nil || len(gained) != 0 {
		t.Fatalf("gain again: %v, %v", gained, err)
	}
	got, err := other.ScopeLabels(ctx, "claude")
	if err != nil || !reflect.DeepEqual(labelNames(got), []string{"private", "untrusted"}) {
		t.Fatalf("other process reads %v, %v", got, err)
	}
	if got[0].CallID != read || got[0].Tool != "read_file" || string(got[0].Args) != `{"path":"/home/me/taxes.md"}` {
		t.Fatalf("label names the wrong call: %+v", got[0])
	}
	if none, err := l.ScopeLabels(ctx, "session:x"); err != nil || len(none) != 0 {
		t.Fatalf("another scope reads %v, %v", none, err)
	}
	if sc, err := l.SessionScope(ctx, s2.ID()); err != nil || sc != "claude" {
		t.Fatalf("session scope %q, %v", sc, err)
	}
	call, err := other.Declassify(ctx, "claude", "private", "the operator sent it")
	if err != nil || call != read {
		t.Fatalf("declassify: %d, %v", call, err)
	}
	if _, err := l.Declassify(ctx, "claude", "private", "again"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("declassify twice: %v", err)
	}
	got, _ = l.ScopeLabels(ctx, "claude")
	if !reflect.DeepEqual(labelNames(got), []string{"untrusted"}) {
		t.Fatalf("after declassify: %v", labelNames(got))
	}
	// A label declassified can be gained again, by a later call.
	if gained, err := l.GainLabels(ctx, "claude", s1.ID(), again, []string{"private"}); err != nil || len(gained) != 1 {
		t.Fatalf("gain after declassify: %v, %v", gained, err)
	}
	evs, err := l.Events(ctx, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range evs {
		if strings.HasPrefix(e.Kind, "label") || strings.HasPrefix(e.Kind, "scope") {
			kinds = append(kinds, e.Kind)
		}
	}
	want := []string{"scope.joined", "scope.joined", "label.gained", "label.gained", "label.declassified", "label.gained"}
	if !reflect.DeepEqual(kinds, want) {
		t.Fatalf("events %v, want %v", kinds, want)
	}
	if rep, err := l.Verify(ctx); err != nil || !rep.OK {
		t.Fatalf("verify: %+v, %v", rep, err)
	}
}

// Proves L8 for labels: an edited, deleted or reopened label row is named
// by Verify.
func TestVerifyNamesEditedLabels(t *testing.T) {
	for name, q := range map[string]string{
		"edited":   `UPDATE labels SET call_id = 2 WHERE label = 'untrusted'`,
		"deleted":  `DELETE FROM labels WHERE label = 'untrusted'`,
		"reopened": `UPDATE labels SET ended_at = NULL, ended_by = NULL, end_reason = NULL WHERE label = 'private'`,
		"scope":    `UPDATE scopes SET scope = 'other'`,
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			path := filepath.Join(t.TempDir(), "ledger.db")
			l := openTest(t, path, Options{LeaseTTL: time.Hour})
			s := startSession(t, l)
			if _, err := l.JoinScope(ctx, s.ID(), "h", time.Minute); err != nil {
				t.Fatal(err)
			}
			id, err := l.RecordCall(ctx, CallStart{SessionID: s.ID(), Server: "fs", Tool: "read_file", Decision: "allow", Class: "read"})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := l.GainLabels(ctx, "h", s.ID(), id, []string{"private", "untrusted"}); err != nil {
				t.Fatal(err)
			}
			if _, err := l.Declassify(ctx, "h", "private", "ok"); err != nil {
				t.Fatal(err)
			}
			if rep, err := l.Verify(ctx); err != nil || !rep.OK {
				t.Fatalf("verify: %+v, %v", rep, err)
			}
			mustExec(t, plainDB(t, path), q)
			rep, err := l.Verify(ctx)
			want := "labels"
			if name == "scope" {
				want = "scopes"
			}
			if err != nil || rep.OK || rep.Table != want {
				t.Fatalf("verify after %s: %+v, %v", name, rep, err)
			}
		})
	}
}

// Proves F3's end: a scope none of whose sessions has been alive within the
// grace period loses its labels when a session joins it or ExpireScopes
// runs, recorded; while one is alive, nothing ends.
func TestScopeEndsAfterGrace(t *testing.T) {
	ctx := context.Background()
	now := time.Unix(1_700_000_000, 0)
	clock := func() time.Time { return now }
	path := filepath.Join(t.TempDir(), "ledger.db")
	l := openTest(t, path, Options{LeaseTTL: time.Minute, Now: clock})
	s := startSession(t, l)
	if _, err := l.JoinScope(ctx, s.ID(), "h", time.Minute); err != nil {
		t.Fatal(err)
	}
	id, err := l.RecordCall(ctx, CallStart{SessionID: s.ID(), Server: "fs", Tool: "read_file", Decision: "allow", Class: "read"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.GainLabels(ctx, "h", s.ID(), id, []string{"private"}); err != nil {
		t.Fatal(err)
	}
	if err := s.End(ctx); err != nil {
		t.Fatal(err)
	}
	// Ended, but within the grace: a new session of the host keeps them.
	now = now.Add(30 * time.Second)
	s2 := startSession(t, l)
	if ended, err := l.JoinScope(ctx, s2.ID(), "h", time.Minute); err != nil || ended != nil {
		t.Fatalf("join within grace: %v, %v", ended, err)
	}
	if err := s2.End(ctx); err != nil {
		t.Fatal(err)
	}
	if scopes, err := l.ExpireScopes(ctx, time.Minute); err != nil || scopes != nil {
		t.Fatalf("expire within grace: %v, %v", scopes, err)
	}
	now = now.Add(2 * time.Minute)
	s3 := startSession(t, l)
	if ended, err := l.JoinScope(ctx, s3.ID(), "h", time.Minute); err != nil || !reflect.DeepEqual(ended, []string{"private"}) {
		t.Fatalf("join after grace: %v, %v", ended, err)
	}
	if ls, _ := l.ScopeLabels(ctx, "h"); len(ls) != 0 {
		t.Fatalf("labels after the scope ended: %v", labelNames(ls))
	}
	// ExpireScopes does the same for a scope nobody joins again.
	if _, err := l.GainLabels(ctx, "h", s3.ID(), id, []string{"untrusted"}); err != nil {
		t.Fatal(err)
	}
	if scopes, err := l.ExpireScopes(ctx, time.Minute); err != nil || scopes != nil {
		t.Fatalf("expire with a live session: %v, %v", scopes, err)
	}
	if err := s3.End(ctx); err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Minute)
	if scopes, err := l.ExpireScopes(ctx, time.Minute); err != nil || !reflect.DeepEqual(scopes, []string{"h"}) {
		t.Fatalf("expire: %v, %v", scopes, err)
	}
	if rep, err := l.Verify(ctx); err != nil || !rep.OK {
		t.Fatalf("verify: %+v, %v", rep, err)
	}
}

// Proves the v6 -> v7 upgrade: a ledger written by the schema before labels
// (testdata/v6.ledger, made by 71b4467's boundLedger) opens, its approval
// rows (whose digest the new column changed) are rebound by a ledger.bound
// event in the migration's transaction, Verify passes, the approval reads
// with no label set, and new label rows verify.
func TestUpgradeV6AddsLabels(t *testing.T) {
	ctx := context.Background()
	path := copyFixture(t, "testdata/v6.ledger")
	l := openTest(t, path, Options{LeaseTTL: time.Hour})
	rep, err := l.Verify(ctx)
	if err != nil || !rep.OK {
		t.Fatalf("upgraded ledger: %+v, %v", rep, err)
	}
	evs, err := l.Events(ctx, 12, 10)
	if err != nil || len(evs) != 1 || evs[0].Kind != "ledger.bound" || !strings.Contains(string(evs[0].Body), `"approvals:1"`) {
		t.Fatalf("migration event: %+v, %v", evs, err)
	}
	a, err := l.Approval(ctx, 1)
	if err != nil || a.Labels != "" || a.State != ApprovalUsed {
		t.Fatalf("old approval: %+v, %v", a, err)
	}
	s := startSession(t, l)
	if _, err := l.JoinScope(ctx, s.ID(), "h", time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := l.GainLabels(ctx, "h", s.ID(), 1, []string{"private"}); err != nil {
		t.Fatal(err)
	}
	if rep, err := l.Verify(ctx); err != nil || !rep.OK {
		t.Fatalf("after labels: %+v, %v", rep, err)
	}
	// An old approval edited after the upgrade is named.
	mustExec(t, plainDB(t, path), `UPDATE approvals SET labels = 'x' WHERE id = 1`)
	if rep, err := l.Verify(ctx); err != nil || rep.OK || rep.Table != "approvals" {
		t.Fatalf("edited old approval: %+v, %v", rep, err)
	}
}
