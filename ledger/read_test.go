package ledger

import (
	"context"
	"strings"
	"testing"
	"time"
)

// Proves L5: rows that do not decode (garbage args, args that no longer
// match their digest, an unknown state, an event body that is not JSON) are
// listed with DecodeError, never acted on as data, and never make the
// listing fail.
func TestCorruptRowsListedWithDecodeError(t *testing.T) {
	ctx := context.Background()
	path := newClosedLedger(t)
	l := openTest(t, path, Options{})
	s := startSession(t, l)
	var ids []int64
	for range 4 {
		id, err := l.RecordCall(ctx, CallStart{SessionID: s.ID(), Server: "fs", Tool: "read", Args: []byte(`{"p":1}`), Decision: "allow"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	db := plainDB(t, path)
	mustExec(t, db, `UPDATE calls SET args = x'ff00fe7b' WHERE id = ?`, ids[1])
	mustExec(t, db, `UPDATE calls SET args = CAST('{"p":2}' AS BLOB) WHERE id = ?`, ids[2])
	mustExec(t, db, `UPDATE calls SET state = 'exploded' WHERE id = ?`, ids[3])
	mustExec(t, db, `UPDATE events SET body = x'00ff' WHERE seq = 2`)

	rows, err := l.Calls(ctx, CallFilter{})
	if err != nil {
		t.Fatalf("Calls failed as a whole: %v", err)
	}
	if len(rows) != 4 {
		t.Fatalf("%d rows, want 4", len(rows))
	}
	byID := map[int64]CallRow{}
	for _, r := range rows {
		byID[r.ID] = r
	}
	if r := byID[ids[0]]; r.DecodeError != "" || string(r.Args) != `{"p":1}` {
		t.Fatalf("good row: %+v", r)
	}
	if r := byID[ids[1]]; !strings.HasPrefix(r.DecodeError, "args: ") || r.Args != nil || r.Server != "fs" {
		t.Fatalf("garbage args row: DecodeError=%q Args=%q Server=%q", r.DecodeError, r.Args, r.Server)
	}
	if r := byID[ids[2]]; !strings.HasPrefix(r.DecodeError, "args_digest: ") || r.Args != nil {
		t.Fatalf("swapped args row: DecodeError=%q Args=%q", r.DecodeError, r.Args)
	}
	if r := byID[ids[3]]; !strings.Contains(r.DecodeError, `state: unknown state "exploded"`) {
		t.Fatalf("unknown state row: %q", r.DecodeError)
	}
	if r, err := l.Call(ctx, ids[1]); err != nil || r.DecodeError == "" {
		t.Fatalf("Call of a corrupt row: %+v %v", r, err)
	}

	evs, err := l.Events(ctx, 0, 100)
	if err != nil {
		t.Fatalf("Events failed as a whole: %v", err)
	}
	var bad, good int
	for _, e := range evs {
		switch {
		case e.Seq == 2 && strings.HasPrefix(e.DecodeError, "body: ") && e.Body == nil:
			bad++
		case e.DecodeError == "" && e.Body != nil:
			good++
		default:
			t.Errorf("event %+v", e)
		}
	}
	if bad != 1 || good != len(evs)-1 {
		t.Fatalf("events: %d bad, %d good of %d", bad, good, len(evs))
	}
}

// Proves keyset paging: pages follow each other with Before, without
// overlap or gaps, filters apply, and Limit is clamped.
func TestCallsPaging(t *testing.T) {
	ctx := context.Background()
	path := newClosedLedger(t)
	bulkCalls(t, path, 250)
	l := openTest(t, path, Options{})

	var seen []int64
	before := int64(0)
	for {
		page, err := l.Calls(ctx, CallFilter{Server: "s1", Before: before, Limit: 20})
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		for _, r := range page {
			if r.Server != "s1" || r.DecodeError != "" {
				t.Fatalf("row %+v", r)
			}
			if len(seen) > 0 && r.ID >= seen[len(seen)-1] {
				t.Fatalf("not newest first: %d after %d", r.ID, seen[len(seen)-1])
			}
			seen = append(seen, r.ID)
		}
		before = page[len(page)-1].ID
	}
	if len(seen) != 250/4+1 && len(seen) != 250/4 {
		t.Fatalf("%d rows for s1", len(seen))
	}
	all, _ := l.Calls(ctx, CallFilter{Limit: 5000})
	if len(all) != 250 {
		t.Fatalf("limit 5000 gave %d rows (clamped to 1000, 250 exist)", len(all))
	}
	def, _ := l.Calls(ctx, CallFilter{})
	if len(def) != 50 {
		t.Fatalf("default limit gave %d", len(def))
	}
	st, _ := l.Calls(ctx, CallFilter{Server: "s2", Tool: "t2", State: "done", Since: time.UnixMilli(1_700_000_000_100)})
	for _, r := range st {
		if r.Server != "s2" || r.Tool != "t2" || r.StartedAt.UnixMilli() < 1_700_000_000_100 {
			t.Fatalf("filtered row %+v", r)
		}
	}
	if len(st) == 0 {
		t.Fatal("no rows for s2/t2")
	}
}

// Proves every listing filter is served by an index (no full scan, no sort),
// so a page costs the same on a 1M-row ledger.
func TestCallsQueryPlans(t *testing.T) {
	l := openTest(t, "", Options{})
	for _, f := range []CallFilter{
		{}, {Before: 10},
		{Server: "s"}, {Server: "s", Before: 10},
		{Server: "s", Tool: "t"}, {Server: "s", Tool: "t", Before: 10},
		{Tool: "t"}, {State: "started"}, {State: "refused", Before: 10}, {State: "done", Before: 10},
		{Kind: "prompt"}, {Kind: "resource", Before: 10},
		{State: "done"}, {Kind: "tool"}, // most rows: the ids walked down, no index
	} {
		q, args := callsQuery(f)
		p := queryPlan(t, l, q, args...)
		t.Logf("%+v: %s", f, p)
		if strings.Contains(p, "TEMP B-TREE") {
			t.Errorf("%+v: sorts: %s", f, p)
		}
		// The walk of calls is the plan's first step; the rest reads each
		// row's long arguments (call_args), one key lookup a row.
		walk, rest, _ := strings.Cut(p, " | ")
		if !strings.Contains(walk, " calls") || rest != "CORRELATED SCALAR SUBQUERY 1 | SEARCH a USING INTEGER PRIMARY KEY (rowid=?)" {
			t.Errorf("%+v: not a walk of calls and a lookup of call_args: %s", f, p)
		}
		common := (f.State == "" || f.State == StateDone) && (f.Kind == "" || f.Kind == KindTool)
		filtered := f.Server != "" || f.Tool != "" || f.Before > 0 || !common
		if filtered && !strings.Contains(walk, "USING INDEX") && !strings.Contains(walk, "INTEGER PRIMARY KEY") {
			t.Errorf("%+v: not indexed: %s", f, p)
		}
	}
}

// The queries that run on every pin check, reset check, recovery and L7's
// check (explain's, and serve's when another write dropped its set) use the partial indexes
// (migration5), so they stay cheap on a large ledger.
func TestHotQueryPlans(t *testing.T) {
	l := openTest(t, "", Options{})
	for _, c := range []struct {
		q, want string
		args    []any
	}{
		{pinsVersionQuery, "events_subject_seq", nil},
		{resetVersionQuery, "events_subject_seq", []any{"x"}},
		{startedCallsQuery, "calls_state_id", []any{1}},
		{waitingCallsQuery, "calls_state_id", []any{1}},
		{interruptedCallsQuery, "SEARCH i USING INDEX calls_state_id", []any{"s", "t", "d"}},
		{interruptedSetQuery, "SEARCH i USING INDEX calls_state_id", nil},
	} {
		if p := queryPlan(t, l, c.q, c.args...); !strings.Contains(p, c.want) {
			t.Errorf("%s\nplan: %s\nwant it to use %s", c.q, p, c.want)
		}
	}
}

// queryPlan is SQLite's plan for q, its steps joined by " | ".
func queryPlan(t *testing.T, l *Ledger, q string, args ...any) string {
	t.Helper()
	rows, err := l.rdb.Query("EXPLAIN QUERY PLAN "+q, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(plan, " | ")
}
