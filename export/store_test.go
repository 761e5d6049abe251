package export

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mcp-guard/mcp-guard/ledger"
)

// Through the Store, the ledger records exactly what it would alone (the
// same IDs, rows and chain), and each decision and committed outcome is
// queued for export with the call's identity; outcomes recorded lazily
// from many goroutines are all exported.
func TestStore_RecordsUnchangedAndExports(t *testing.T) {
	ctx := context.Background()
	led, err := ledger.Open(ctx, filepath.Join(t.TempDir(), "l.db"), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer led.Close()
	sess, err := led.StartSession(ctx, ledger.SessionInfo{Kind: "serve", Host: "test", PID: 1})
	if err != nil {
		t.Fatal(err)
	}
	x := newTest(t, Options{Batch: 1000})
	s := Wrap(led, x)
	const n = 20
	ids := make([]int64, n)
	for i := range n {
		c := ledger.CallStart{SessionID: sess.ID(), Server: "db", Tool: "read", Args: []byte(`{"i":1}`), Decision: "allow", Rule: 2, Class: "read"}
		if i%2 == 1 {
			c.Decision, c.Reason = "deny", "never"
		}
		if ids[i], err = s.RecordCall(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for i := 0; i < n; i += 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			done := make(chan error, 1)
			s.RecordOutcomeLazy(ids[i], ledger.Outcome{State: ledger.StateDone, ResultBytes: 5}, func(err error) { done <- err })
			if err := <-done; err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	rows, err := led.Calls(ctx, ledger.CallFilter{Limit: 100})
	if err != nil || len(rows) != n {
		t.Fatalf("%d rows, %v", len(rows), err)
	}
	if rep, err := led.Verify(ctx); err != nil || !rep.OK {
		t.Fatalf("verify: %+v, %v", rep, err)
	}
	// Outcomes are queued after the commit; wait for the last of them.
	var got []Event
	for len(got) < n+n/2 {
		b := x.take()
		got = append(got, b...)
		if len(b) == 0 {
			<-x.wake
		}
	}
	decisions, outcomes := 0, 0
	for _, e := range got {
		switch e.What {
		case EventDecision:
			decisions++
			if e.Server != "db" || e.Name != "read" || e.SessionID != sess.ID() || e.Args != nil {
				t.Errorf("decision %+v", e)
			}
		case EventOutcome:
			outcomes++
			if e.Server != "db" || e.Name != "read" || e.Decision != "allow" || e.State != ledger.StateDone {
				t.Errorf("outcome %+v", e)
			}
		}
	}
	if decisions != n || outcomes != n/2 {
		t.Fatalf("%d decisions, %d outcomes exported; want %d, %d", decisions, outcomes, n, n/2)
	}
}

// Proves the Store passes a redaction record to the ledger it wraps: with
// export on, serve still records which credential it redacted and where.
func TestStore_ForwardsRedactions(t *testing.T) {
	ctx := context.Background()
	led, err := ledger.Open(ctx, filepath.Join(t.TempDir(), "l.db"), ledger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer led.Close()
	s := Wrap(led, newTest(t, Options{Batch: 1000}))
	rec := ledger.Redacted{Session: "1", Host: "stdio", Message: "answer to 7",
		Hits: []ledger.Redaction{{Server: "keys", Name: "API_TOKEN", Encoding: "raw", At: "/result/content/0/text"}}}
	if err := <-s.RecordRedactionLazy(rec); err != nil {
		t.Fatal(err)
	}
	evs, err := led.RedactionEvents(ctx, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1 || !strings.Contains(string(evs[0].Body), "API_TOKEN") {
		t.Fatalf("the ledger holds %d redaction events: %+v", len(evs), evs)
	}
}
