package ledger

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// A serve that opens a new ledger while another process is still writing
// the file's first transaction (serves started together by hosts that
// share one ledger) waits for it: turning the file to WAL answers
// SQLITE_BUSY at once, not after the busy timeout, while another
// connection holds the write lock, and open tries again within the busy
// timeout. A file locked for the whole timeout is still refused.
func TestOpen_WaitsForAnotherWriterOfANewFile(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		busy time.Duration
		hold time.Duration
		open bool // the open waits for the lock and opens
	}{
		{name: "released within the busy timeout", busy: 5 * time.Second, hold: 200 * time.Millisecond, open: true},
		{name: "held past the busy timeout", busy: time.Second, hold: 4 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "ledger.db")
			if err := os.WriteFile(path, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			db, err := sql.Open("sqlite", path)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			conn, err := db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE; CREATE TABLE first_writer(a)"); err != nil {
				t.Fatal(err)
			}
			timer := time.AfterFunc(tc.hold, func() { conn.ExecContext(ctx, "ROLLBACK") })
			defer timer.Stop()
			l, err := Open(ctx, path, Options{BusyTimeout: tc.busy})
			if l != nil {
				l.Close()
			}
			switch {
			case tc.open && err != nil:
				t.Fatalf("a new file another writer held for %s (busy timeout %s): %v", tc.hold, tc.busy, err)
			case !tc.open && err == nil:
				t.Fatalf("a new file another writer held for %s, past the busy timeout (%s), was opened", tc.hold, tc.busy)
			}
		})
	}
}
