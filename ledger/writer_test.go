package ledger

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"
)

var errBoom = errors.New("boom")

// Proves group commit keeps every write: 8 goroutines x N writes, every
// 10th failing on purpose after appending; the others are all durable
// (still there after Close and reopen) and form one unbroken chain that
// spans several Verify pages.
func TestGroupCommitConcurrentWrites(t *testing.T) {
	const goroutines, perG = 8, 150
	path := newClosedLedger(t) // 1 event
	l := openTest(t, path, Options{})
	var wg sync.WaitGroup
	errs := make(chan error, goroutines*perG)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perG {
				fail := i%10 == 9
				err := l.Write(context.Background(), func(tx *Tx) error {
					if _, err := tx.AppendEvent("test.write", fmt.Sprintf("g%d", g), map[string]any{"g": int64(g), "i": int64(i)}); err != nil {
						return err
					}
					if fail {
						return errBoom
					}
					return nil
				})
				switch {
				case fail && !errors.Is(err, errBoom):
					errs <- fmt.Errorf("g%d i%d: failing op returned %v", g, i, err)
				case !fail && err != nil:
					errs <- fmt.Errorf("g%d i%d: %v", g, i, err)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}

	l = openTest(t, path, Options{})
	want := int64(1 + goroutines*perG*9/10)
	rep, err := l.Verify(context.Background())
	if err != nil || !rep.OK || rep.Events != want {
		t.Fatalf("after reopen: %+v, %v; want OK with %d events", rep, err, want)
	}
	if n := countRows(t, l.rdb, `SELECT count(*) FROM events WHERE body LIKE '%"i":9}' OR body LIKE '%"i":19}'`); n != 0 {
		t.Fatalf("%d events of failed ops were committed", n)
	}
}

// blockWriter queues an op that holds the writer until release is closed,
// so that ops queued meanwhile land in one batch.
func blockWriter(t *testing.T, l *Ledger) (release func(), done <-chan error) {
	t.Helper()
	started := make(chan struct{})
	gate := make(chan struct{})
	ch := make(chan error, 1)
	go func() {
		ch <- l.Write(context.Background(), func(tx *Tx) error {
			close(started)
			<-gate
			return nil
		})
	}()
	<-started
	return func() { close(gate) }, ch
}

// queued is how many operations wait for a transaction.
func (l *Ledger) queued() int {
	l.wq.mu.Lock()
	defer l.wq.mu.Unlock()
	return len(l.wq.pending)
}

func waitQueued(t *testing.T, l *Ledger, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for l.queued() < n {
		if time.Now().After(deadline) {
			t.Fatalf("only %d ops queued, want %d", l.queued(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

// Proves savepoint isolation inside one batch: an op that fails (after
// writing a row and appending an event), and one that panics, are rolled
// back alone; the ops around them in the same transaction commit, and the
// chain head tracked in memory is rolled back with them (the next op takes
// the seq the failed one had used). Rerunnable ops (a call's decision and
// outcome) first run without savepoints; when one fails the batch runs
// again with them, with the same result.
func TestSavepointFailureIsolatedInBatch(t *testing.T) {
	for _, rerun := range []bool{false, true} {
		t.Run(fmt.Sprintf("rerun=%v", rerun), func(t *testing.T) { testFailureIsolated(t, rerun) })
	}
}

func testFailureIsolated(t *testing.T, rerun bool) {
	// No timer leads a batch here: the Writes queued behind the blocked
	// one are led by one of their own callers, handed the lead.
	l := openTest(t, "", Options{lazyDelay: time.Hour})
	appendEvents(t, l, 1)
	release, blocked := blockWriter(t, l)

	type res struct {
		name string
		seq  int64
		err  error
	}
	results := make(chan res, 4)
	write := func(name string, fail, panics bool) {
		var seq int64
		err := l.write(context.Background(), func(tx *Tx) error {
			if _, err := tx.Exec(`INSERT INTO sessions (id, kind, host, pid, started_at, heartbeat_at) VALUES (?, 'k', 'h', 1, 0, 0)`, name); err != nil {
				return err
			}
			tx.touch("sessions", name) // its event binds it
			var err error
			if seq, err = tx.AppendEvent("test", name, map[string]any{"name": name}); err != nil {
				return err
			}
			if panics {
				panic("op bug")
			}
			if fail {
				return errBoom
			}
			return nil
		}, rerun)
		results <- res{name, seq, err}
	}
	go write("ok1", false, false)
	waitQueued(t, l, 1)
	go write("bad", true, false)
	waitQueued(t, l, 2)
	go write("panics", false, true)
	waitQueued(t, l, 3)
	go write("ok2", false, false)
	waitQueued(t, l, 4)
	release()
	if err := <-blocked; err != nil {
		t.Fatal(err)
	}
	got := map[string]res{}
	for range 4 {
		select {
		case r := <-results:
			got[r.name] = r
		case <-time.After(20 * time.Second):
			t.Fatalf("queued writes never committed; got %+v", got)
		}
	}
	if got["ok1"].err != nil || got["ok2"].err != nil {
		t.Fatalf("good ops failed: %+v", got)
	}
	if !errors.Is(got["bad"].err, errBoom) {
		t.Fatalf("bad op: %v", got["bad"].err)
	}
	if e := got["panics"].err; e == nil || !strings.Contains(e.Error(), "panicked") {
		t.Fatalf("panicking op: %v", e)
	}
	if got["ok1"].seq != 2 || got["ok2"].seq != 3 {
		t.Fatalf("seqs ok1=%d ok2=%d, want 2 and 3 (failed ops' seqs reused)", got["ok1"].seq, got["ok2"].seq)
	}
	if n := countRows(t, l.rdb, `SELECT count(*) FROM sessions WHERE id IN ('bad', 'panics')`); n != 0 {
		t.Fatalf("rows of failed ops committed: %d", n)
	}
	if n := countRows(t, l.rdb, `SELECT count(*) FROM sessions WHERE id IN ('ok1', 'ok2')`); n != 2 {
		t.Fatalf("rows of good ops: %d, want 2", n)
	}
	rep, err := l.Verify(context.Background())
	if err != nil || !rep.OK || rep.Events != 3 {
		t.Fatalf("verify: %+v %v", rep, err)
	}
}

// Proves Write's context contract: a done context never queues the op; and
// a body canon cannot encode fails the whole op with nothing stored (J2).
func TestWriteContextAndUnencodableBody(t *testing.T) {
	l := openTest(t, "", Options{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ran := false
	if err := l.Write(ctx, func(*Tx) error { ran = true; return nil }); !errors.Is(err, context.Canceled) || ran {
		t.Fatalf("cancelled ctx: err=%v ran=%v", err, ran)
	}
	for _, body := range []any{math.NaN(), map[string]any{"f": func() {}}, int64(1) << 60} {
		err := l.Write(context.Background(), func(tx *Tx) error {
			_, err := tx.AppendEvent("test", "x", body)
			return err
		})
		if err == nil {
			t.Errorf("body %v: write succeeded", body)
		}
	}
	if n := countRows(t, l.rdb, `SELECT count(*) FROM events`); n != 0 {
		t.Fatalf("%d events stored for unencodable bodies", n)
	}
	if err := l.Write(context.Background(), func(tx *Tx) error {
		_, err := tx.Exec("COMMIT")
		return err
	}); err == nil {
		t.Fatal("COMMIT inside an op was allowed")
	}
	l.Close()
	if err := l.Write(context.Background(), func(*Tx) error { return nil }); !errors.Is(err, ErrClosed) {
		t.Fatalf("write after close: %v", err)
	}
}

// Proves Close drains: ops queued before Close are committed, not dropped.
// lazyResult waits for a lazy write's result; a write never committed
// fails the test instead of hanging it.
func lazyResult(t *testing.T, ch <-chan error) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(20 * time.Second):
		t.Fatal("a lazy write was never committed")
		return nil
	}
}

func TestCloseDrainsQueue(t *testing.T) {
	path := newClosedLedger(t)
	l := openTest(t, path, Options{})
	release, _ := blockWriter(t, l)
	var wg sync.WaitGroup
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := l.Write(context.Background(), func(tx *Tx) error {
				_, err := tx.AppendEvent("test", "drain", map[string]any{"i": int64(i)})
				return err
			}); err != nil {
				t.Error(err)
			}
		}()
	}
	waitQueued(t, l, 10)
	// Lazy writes no Write leads are committed by Close, not dropped.
	var lazy []<-chan error
	for i := range 3 {
		lazy = append(lazy, l.WriteLazy(func(tx *Tx) error {
			_, err := tx.AppendEvent("test", "drain", map[string]any{"lazy": int64(i)})
			return err
		}))
	}
	waitQueued(t, l, 13)
	closed := make(chan error)
	go func() { closed <- l.Close() }()
	release()
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for _, ch := range lazy {
		if err := lazyResult(t, ch); err != nil {
			t.Errorf("lazy write: %v", err)
		}
	}
	if err := l.Write(context.Background(), appendOne); !errors.Is(err, ErrClosed) {
		t.Errorf("Write after Close = %v, want ErrClosed", err)
	}
	if err := <-l.WriteLazy(appendOne); !errors.Is(err, ErrClosed) {
		t.Errorf("WriteLazy after Close = %v, want ErrClosed", err)
	}
	// Lazy writes alone, which only their timer (an hour here) would lead,
	// are led by Close.
	l = openTest(t, path, Options{lazyDelay: time.Hour})
	lazy = lazy[:0]
	for i := range 2 {
		lazy = append(lazy, l.WriteLazy(func(tx *Tx) error {
			_, err := tx.AppendEvent("test", "drain", map[string]any{"alone": int64(i)})
			return err
		}))
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	for _, ch := range lazy {
		if err := lazyResult(t, ch); err != nil {
			t.Errorf("lazy write alone: %v", err)
		}
	}
	l = openTest(t, path, Options{})
	if n := countRows(t, l.rdb, `SELECT count(*) FROM events WHERE subject = 'drain'`); n != 15 {
		t.Fatalf("%d drained events, want 15", n)
	}
}

// Proves two Ledgers on one file (as two processes would) writing at once
// still form one valid chain: BEGIN IMMEDIATE serializes them and each reads
// the chain head inside its transaction.
func TestTwoLedgersOneFile(t *testing.T) {
	path := newClosedLedger(t)
	a := openTest(t, path, Options{})
	b := openTest(t, path, Options{})
	var wg sync.WaitGroup
	for _, l := range []*Ledger{a, b, a, b} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				if err := l.Write(context.Background(), func(tx *Tx) error {
					_, err := tx.AppendEvent("test", "two", map[string]any{"i": int64(i)})
					return err
				}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, l := range []*Ledger{a, b} {
		rep, err := l.Verify(context.Background())
		if err != nil || !rep.OK || rep.Events != 201 {
			t.Fatalf("verify: %+v %v, want OK with 201 events", rep, err)
		}
	}
}

// Proves CAS accepts only known tables and columns.
func TestCASAllowlist(t *testing.T) {
	l := openTest(t, "", Options{})
	cases := []struct {
		table, idCol string
		set          map[string]any
		want         string
	}{
		{"sessions", "id", nil, "not a table with a state column"},
		{"calls; DROP TABLE events", "id", nil, "not a table with a state column"},
		{"calls", "id = id OR 1", nil, "is not a column"},
		{"calls", "id", map[string]any{"error = 'x', state": 1}, "cannot set"},
		{"calls", "id", map[string]any{"state": "x"}, "cannot set"},
		{"calls", "id", map[string]any{"nope": 1}, "cannot set"},
	}
	for _, c := range cases {
		err := l.Write(context.Background(), func(tx *Tx) error {
			return tx.CAS(c.table, c.idCol, 1, "started", "done", c.set)
		})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("CAS(%q, %q, %v): %v, want %q", c.table, c.idCol, c.set, err, c.want)
		}
	}
	err := l.Write(context.Background(), func(tx *Tx) error {
		return tx.CAS("calls", "id", 12345, "started", "done", map[string]any{"error": "x"})
	})
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("CAS on a missing row: %v, want ErrConflict", err)
	}
}

// Proves L2 for CAS itself: a row moves only from the state named, once;
// the row keeps what the first move wrote.
func TestCASMovesOnlyFromTheStateNamed(t *testing.T) {
	ctx := context.Background()
	l := openTest(t, "", Options{})
	s := startSession(t, l)
	id, err := l.RecordCall(ctx, CallStart{SessionID: s.ID(), Server: "fs", Tool: "write", Args: []byte(`{}`), Decision: "allow"})
	if err != nil {
		t.Fatal(err)
	}
	move := func(from, to, reason string) error {
		return l.Write(ctx, func(tx *Tx) error {
			if err := tx.CAS("calls", "id", id, from, to, map[string]any{"reason": reason}); err != nil {
				return err
			}
			_, err := tx.AppendEvent("test.moved", callSubject(id), map[string]any{"to": to})
			return err
		})
	}
	if err := move(StateWaiting, StateRefused, "not waiting"); !errors.Is(err, ErrConflict) {
		t.Fatalf("CAS from a state the row is not in: %v, want ErrConflict", err)
	}
	if err := move(StateStarted, StateFailed, "first"); err != nil {
		t.Fatalf("CAS from its state: %v", err)
	}
	if err := move(StateStarted, StateCancelled, "second"); !errors.Is(err, ErrConflict) {
		t.Fatalf("second CAS from started: %v, want ErrConflict", err)
	}
	var state, reason string
	if err := l.rdb.QueryRowContext(ctx, `SELECT state, reason FROM calls WHERE id = ?`, id).Scan(&state, &reason); err != nil {
		t.Fatal(err)
	}
	if state != StateFailed || reason != "first" {
		t.Fatalf("row %s %q, want failed \"first\"", state, reason)
	}
	if rep, err := l.Verify(ctx); err != nil || !rep.OK {
		t.Fatalf("verify: %+v %v", rep, err)
	}
}
