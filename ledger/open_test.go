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
// timeout. A file locked for longer than that is still refused.
func TestOpen_WaitsForAnotherWriterOfANewFile(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		hold   time.Duration
		opened bool
	}{
		{hold: 300 * time.Millisecond, opened: true},
		{hold: 1500 * time.Millisecond, opened: false},
	} {
		path := filepath.Join(t.TempDir(), "ledger.db")
		if err := os.WriteFile(path, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		db, err := sql.Open("sqlite", path)
		if err != nil {
			t.Fatal(err)
		}
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE; CREATE TABLE first_writer(a)"); err != nil {
			t.Fatal(err)
		}
		released := make(chan struct{})
		go func() {
			time.Sleep(tc.hold)
			conn.ExecContext(ctx, "ROLLBACK")
			conn.Close()
			db.Close()
			close(released)
		}()
		l, err := Open(ctx, path, Options{BusyTimeout: time.Second})
		if tc.opened && err != nil {
			t.Fatalf("a new file locked for %s by another writer: %v", tc.hold, err)
		}
		if !tc.opened && err == nil {
			t.Fatalf("a new file locked for %s, past the busy timeout, was opened", tc.hold)
		}
		if l != nil {
			l.Close()
		}
		<-released
	}
}
