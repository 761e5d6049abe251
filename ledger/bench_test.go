package ledger

import (
	"context"
	"database/sql"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-guard/mcp-guard/internal/canon"
	"github.com/mcp-guard/mcp-guard/testdata/benchcpu"
)

func appendOne(tx *Tx) error {
	_, err := tx.AppendEvent("bench.write", "bench", map[string]any{"server": "fs", "tool": "read_file", "args_digest": "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"})
	return err
}

// BenchmarkCommit measures durable commits per second (synchronous=FULL),
// each commit appending one hash-chained event: one caller through the
// writer (serial-1), 8 callers through the group-commit writer (group-8),
// and 8 callers each with its own connection doing BEGIN IMMEDIATE ...
// COMMIT per op (nogroup-8, one commit per call).
func BenchmarkCommit(b *testing.B) {
	ctx := context.Background()
	rates := map[string]float64{}
	run := func(name string, f func(b *testing.B, l *Ledger)) {
		b.Run(name, func(b *testing.B) {
			l := openTest(b, filepath.Join(b.TempDir(), "ledger.db"), Options{})
			b.ResetTimer()
			f(b, l)
			b.StopTimer()
			rate := float64(b.N) / b.Elapsed().Seconds()
			b.ReportMetric(rate, "ops/s")
			rates[name] = rate
			if rep, err := l.Verify(ctx); err != nil || !rep.OK || rep.Events != int64(b.N) {
				b.Fatalf("verify: %+v %v", rep, err)
			}
		})
	}
	run("serial-1", func(b *testing.B, l *Ledger) {
		for range b.N {
			if err := l.Write(ctx, appendOne); err != nil {
				b.Fatal(err)
			}
		}
	})
	run("group-8", func(b *testing.B, l *Ledger) {
		benchcpu.Concurrent(b, 8, func() error { return l.Write(ctx, appendOne) })
	})
	run("nogroup-8", func(b *testing.B, l *Ledger) {
		b.StopTimer()
		pool := make(chan *sql.DB, 8) // 8 separate *sql.DB, one connection each
		for range 8 {
			db, err := openDB(l.path, l.opts.BusyTimeout.Milliseconds(), false)
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			db.SetMaxOpenConns(1)
			if err := db.Ping(); err != nil {
				b.Fatal(err)
			}
			pool <- db
		}
		b.StartTimer()
		benchcpu.Concurrent(b, 8, func() error {
			db := <-pool
			defer func() { pool <- db }()
			tx, err := db.BeginTx(ctx, nil) // BEGIN IMMEDIATE: one commit per call
			if err != nil {
				return err
			}
			t := &Tx{l: l, q: tx, ctx: ctx}
			if err := appendOne(t); err != nil {
				tx.Rollback()
				return err
			}
			if err := t.saveHead(); err != nil {
				tx.Rollback()
				return err
			}
			return tx.Commit()
		})
	})
	if s, g, n := rates["serial-1"], rates["group-8"], rates["nogroup-8"]; s > 0 && g > 0 && n > 0 {
		b.Logf("commits/s: serial-1 %.0f, group-8 %.0f, nogroup-8 %.0f; group-8/nogroup-8 = %.2fx, group-8/serial-1 = %.2fx", s, g, n, g/n, g/s)
	}
}

// BenchmarkCallsPage measures one listing page (a server filter, deep in the
// table via the keyset cursor) on a 1k-row and a 1M-row ledger (100k with
// -short). The two should cost about the same.
func BenchmarkCallsPage(b *testing.B) {
	benchPage(b, "calls page", bulkCalls, func(ctx context.Context, l *Ledger, n int) (int, error) {
		rows, err := l.Calls(ctx, CallFilter{Server: "s1", Before: int64(n / 2), Limit: 50})
		return len(rows), err
	})
}

// BenchmarkApprovalsPage: a page of pending approvals costs the same on a
// ledger with 1k approvals as on one with 1M (100k with -short).
func BenchmarkApprovalsPage(b *testing.B) {
	build := func(t testing.TB, path string, n int) string {
		bulkCalls(t, path, n)
		bulkApprovals(t, path, n)
		return ""
	}
	benchPage(b, "approvals page", build, func(ctx context.Context, l *Ledger, n int) (int, error) {
		as, err := l.Approvals(ctx, ApprovalPending, int64(n/2), 50)
		return len(as), err
	})
}

// benchPage times one 50-row page on a ledger of 1k rows and one of 1M
// (100k with -short), and logs the ratio: paging must not slow down with size.
func benchPage(b *testing.B, what string, build func(testing.TB, string, int) string, page func(context.Context, *Ledger, int) (int, error)) {
	ctx := context.Background()
	big, bigName := 1_000_000, "rows=1M"
	if testing.Short() {
		big, bigName = 100_000, "rows=100k"
	}
	perOp := map[int]time.Duration{}
	for _, size := range []struct {
		name string
		n    int
	}{{"rows=1k", 1000}, {bigName, big}} {
		var l *Ledger
		parent := b // the sub-benchmark function runs several times; the ledger lives as long as the parent
		b.Run(size.name, func(b *testing.B) {
			if l == nil {
				path := filepath.Join(parent.TempDir(), "ledger.db")
				openTest(b, path, Options{}).Close()
				start := time.Now()
				build(b, path, size.n)
				b.Logf("built %d rows in %v", size.n, time.Since(start).Round(time.Millisecond))
				l = openTest(parent, path, Options{})
			}
			b.ResetTimer()
			for range b.N {
				if n, err := page(ctx, l, size.n); err != nil || n != 50 {
					b.Fatalf("%d rows, %v", n, err)
				}
			}
			perOp[size.n] = b.Elapsed() / time.Duration(b.N)
		})
	}
	if small, large := perOp[1000], perOp[big]; small > 0 && large > 0 {
		b.Logf("%s: %v on 1k rows, %v on %d rows: ratio %.2f", what, small, large, big, float64(large)/float64(small))
	}
}

// bulkApprovals adds one approval per bulk call, half of them pending.
func bulkApprovals(t testing.TB, path string, n int) {
	t.Helper()
	db := plainDB(t, path)
	defer db.Close()
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	st, err := tx.Prepare(`INSERT INTO approvals (call_id, session_id, server, tool, pin_digest, class, rule, args, args_digest,
		presentation, presentation_digest, binding, state, created_at, expires_at, grant_expires_at)
		VALUES (?, 'bulk0000000000000000000000000000', 's', 't', 'p', 'write', 1, X'7B7D', 'd', 'shown', 'pd', 'b', ?, 0, 0, 0)`)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for i := 1; i <= n; i++ {
		state := ApprovalPending
		if i%2 == 0 {
			state = ApprovalDenied
		}
		if _, err := st.Exec(i, state); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkCallRecord is the ledger's share of one allowed tools/call, as
// the proxy makes it: the decision recorded durably (RecordCall), then its
// outcome queued lazily (it commits with the next decision).
func BenchmarkCallRecord(b *testing.B) {
	benchCallRecord(b, []byte(`{"message":"m123"}`), false)
}

// BenchmarkCallRecordIdle is BenchmarkCallRecord with the writer idle for
// 500 µs before each call, as it is with one caller while the call is
// forwarded and answered: on a machine whose idle CPUs sleep (a
// paravirtualized VM's halt), waking them is part of what a commit costs.
// Its p50 is the floor scripts/bench reports under one caller's p50.
func BenchmarkCallRecordIdle(b *testing.B) {
	benchCallRecordGap(b, []byte(`{"message":"m123"}`), false, 1, 500*time.Microsecond)
}

// BenchmarkCallRecord8 is BenchmarkCallRecord with 8 callers, as serve
// records calls under load: decisions and outcomes share group commits.
func BenchmarkCallRecord8(b *testing.B) {
	benchCallRecordN(b, []byte(`{"message":"m123"}`), false, 8)
}

// BenchmarkCallRecordArgs is BenchmarkCallRecord with arguments of 16 B,
// 64 KiB and 1 MiB (a file written whole), their canonical form made
// before, as the gate passes it: what a call's size costs the writer,
// which every other call's commit waits behind.
func BenchmarkCallRecordArgs(b *testing.B) {
	for _, n := range []int{16, 64 << 10, 1 << 20} {
		b.Run(strconv.Itoa(n), func(b *testing.B) {
			benchCallRecord(b, []byte(`{"content":"`+strings.Repeat("x", n)+`"}`), true)
		})
	}
}

// benchCallRecord records b.N allowed calls with args, one after another;
// with digested, the call carries the arguments' canonical form.
func benchCallRecord(b *testing.B, args []byte, digested bool) {
	benchCallRecordN(b, args, digested, 1)
}

// benchCallRecordN is benchCallRecord with callers recording at once.
func benchCallRecordN(b *testing.B, args []byte, digested bool, callers int) {
	benchCallRecordGap(b, args, digested, callers, 0)
}

// benchCallRecordGap is benchCallRecordN with each caller sleeping for gap
// before each call (not timed in p50-µs).
func benchCallRecordGap(b *testing.B, args []byte, digested bool, callers int, gap time.Duration) {
	ctx := context.Background()
	l := openTest(b, filepath.Join(b.TempDir(), "ledger.db"), Options{})
	var d canon.Digested
	if digested {
		var err error
		if d, err = canon.DigestOf(args); err != nil {
			b.Fatal(err)
		}
	}
	sess, err := l.StartSession(ctx, SessionInfo{})
	if err != nil {
		b.Fatal(err)
	}
	// With one caller, each RecordCall's time is kept: its median,
	// "p50-µs", is what one durable commit adds to a call's latency
	// (scripts/bench reports the floor it sets).
	var lat []time.Duration
	if callers == 1 {
		lat = make([]time.Duration, 0, b.N)
	}
	b.ResetTimer()
	cpu := benchcpu.Start()
	defer cpu.Report(b)
	var n atomic.Int64
	benchcpu.Concurrent(b, callers, func() error {
		if gap > 0 {
			time.Sleep(gap)
		}
		start := time.Now()
		id, err := l.RecordCall(ctx, CallStart{SessionID: sess.ID(), RequestID: "7", Server: "every", Tool: "echo",
			Exposed: "every__echo", PinDigest: "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
			Args: args, ArgsDigested: d, Decision: "allow", Rule: 1, Class: "read"})
		if err != nil {
			return err
		}
		if callers == 1 {
			lat = append(lat, time.Since(start))
		}
		l.RecordOutcomeLazy(id, Outcome{State: StateDone, ResultDigest: "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210",
			ResultBytes: 90 + n.Add(1)%10, Duration: time.Millisecond}, func(error) {})
		return nil
	})
	if len(lat) > 0 {
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	}
}
