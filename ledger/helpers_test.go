package ledger

import (
	"context"
	"database/sql"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/mcp-guard/mcp-guard/internal/canon"
)

// openTest opens a ledger at dir/ledger.db and closes it when the test ends.
func openTest(t testing.TB, path string, opts Options) *Ledger {
	t.Helper()
	if path == "" {
		path = filepath.Join(t.TempDir(), "ledger.db")
	}
	l, err := Open(context.Background(), path, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// plainDB opens the file the way an attacker (or the sqlite3 CLI) would: no
// defensive mode, no checks.
func plainDB(t testing.TB, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", path+"?_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func mustExec(t testing.TB, db interface {
	Exec(string, ...any) (sql.Result, error)
}, q string, args ...any) {
	t.Helper()
	if _, err := db.Exec(q, args...); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

func countRows(t testing.TB, db *sql.DB, q string, args ...any) int64 {
	t.Helper()
	var n int64
	if err := db.QueryRow(q, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// fakeClock is a settable clock for Options.Now.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock(t time.Time) *fakeClock { return &fakeClock{now: t} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// appendEvents writes n events, one Write each.
func appendEvents(t testing.TB, l *Ledger, n int) {
	t.Helper()
	for i := 1; i <= n; i++ {
		err := l.Write(context.Background(), func(tx *Tx) error {
			_, err := tx.AppendEvent("test.event", "test", map[string]any{"n": int64(i)})
			return err
		})
		if err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
	}
}

func startSession(t testing.TB, l *Ledger) *Session {
	t.Helper()
	s, err := l.StartSession(context.Background(), SessionInfo{Kind: "test", Host: "localhost", PID: 1})
	if err != nil {
		t.Fatalf("StartSession: %v", err)
	}
	return s
}

// bulkCalls inserts n finished calls (servers s0..s3, tools t0..t7) through a
// plain connection in one transaction with a prepared statement, and returns
// the session id they belong to.
func bulkCalls(t testing.TB, path string, n int) string {
	t.Helper()
	db := plainDB(t, path)
	defer db.Close()
	tx, err := db.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	const sid = "bulk0000000000000000000000000000"
	if _, err := tx.Exec(`INSERT OR IGNORE INTO sessions (id, kind, host, pid, started_at, heartbeat_at) VALUES (?, 'bulk', 'h', 1, 0, 0)`, sid); err != nil {
		t.Fatal(err)
	}
	st, err := tx.Prepare(`INSERT INTO calls (session_id, server, tool, args, args_digest, decision, rule, state, started_at, ended_at, duration_ms, result_bytes, is_error)
		VALUES (?, ?, ?, ?, ?, 'allow', 1, 'done', ?, ?, 3, 100, 0)`)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	args := []byte(`{"path":"/tmp/x"}`)
	digest := mustDigest(t, args)
	servers := []string{"s0", "s1", "s2", "s3"}
	tools := []string{"t0", "t1", "t2", "t3", "t4", "t5", "t6", "t7"}
	for i := range n {
		at := int64(1_700_000_000_000 + i)
		if _, err := st.Exec(sid, servers[i%4], tools[i%8], args, digest, at, at+3); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	return sid
}

func mustDigest(t testing.TB, b []byte) string {
	t.Helper()
	d, err := canon.Digest(b)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// shownAs is a Decider that accepts every row and names digest as the one a
// decision must give.
func shownAs(digest string) Decider {
	return func(Approval) (string, error) { return digest, nil }
}

// crashedAt leaves in the ledger at path a session of a process that
// crashed at when: its calls recorded as allowed (started), its Ledger
// closed without ending the session. It returns the calls' ids.
func crashedAt(t *testing.T, path string, when time.Time, calls ...CallStart) []int64 {
	t.Helper()
	ctx := context.Background()
	dead, err := Open(ctx, path, Options{Now: func() time.Time { return when }})
	if err != nil {
		t.Fatal(err)
	}
	defer dead.Close()
	ds := startSession(t, dead)
	var ids []int64
	for _, c := range calls {
		c.SessionID, c.Decision = ds.ID(), "allow"
		id, err := dead.RecordCall(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}
