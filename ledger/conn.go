package ledger

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"modernc.org/sqlite"
)

// dsn is the per-connection configuration; the driver applies it to every
// physical connection it opens.
func dsn(path string, busy int64, readOnly bool) string {
	s := path + "?_defensive=1" +
		"&_txlock=immediate" +
		"&_busy_timeout=" + strconv.FormatInt(busy, 10) +
		"&_foreign_keys=on" +
		"&_journal_mode=WAL" +
		"&_synchronous=FULL" +
		"&_pragma=trusted_schema(0)" +
		// A new ledger's pages are 2 KiB: a call's commit writes about seven
		// of them, and with smaller pages the commit's WAL write and fsync
		// move less (a ledger created with other pages keeps them).
		"&_pragma=page_size(2048)" +
		"&_dqs=0"
	if readOnly {
		s += "&_query_only=1"
	} else {
		// The writer appends: its hot pages are the last leaves and their
		// parents, a few dozen. 512 KiB of cache, not SQLite's 2 MiB,
		// keeps serve's resident memory 3 MiB lower at no cost per call.
		s += "&_pragma=cache_size(-512)"
	}
	return s
}

// openDB opens a pool whose every physical connection is checked by
// checkConn before database/sql may use it.
func openDB(path string, busy int64, readOnly bool) (*sql.DB, error) {
	sqlite.StrictPragmas(true)
	// Commits sync with fdatasync(2), as SQLite's own Linux builds do: the
	// data and the size are just as durable, and a commit no longer waits
	// for a journal commit of the file's timestamps, which also flushes
	// other files' pending data (measured: p50 of a call 15-20% lower
	// inside serve). Process-wide; where it is unavailable fsync stays.
	sqlite.Fdatasync(true)
	base, err := sqlite.NewConnector(dsn(path, busy, readOnly))
	if err != nil {
		return nil, fmt.Errorf("ledger: open %s: %w", path, err)
	}
	return sql.OpenDB(&checkedConnector{base: base, path: path, busy: busy, readOnly: readOnly}), nil
}

type checkedConnector struct {
	base     driver.Connector
	path     string
	busy     int64
	readOnly bool
}

func (c *checkedConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.connect(ctx)
	if err != nil {
		return nil, fmt.Errorf("ledger: open %s: %w", c.path, err)
	}
	if err := checkConn(ctx, conn, c.busy, c.readOnly); err != nil {
		conn.Close()
		return nil, fmt.Errorf("ledger: open %s: %w", c.path, err)
	}
	return conn, nil
}

func (c *checkedConnector) Driver() driver.Driver { return c.base.Driver() }

// connect opens a physical connection, trying again for up to the busy
// timeout while it fails with SQLITE_BUSY: turning a new file to WAL takes
// an exclusive lock, and SQLite answers BUSY at once, not after its busy
// handler, when another process holds a lock then (serves started
// together on a new ledger).
func (c *checkedConnector) connect(ctx context.Context) (driver.Conn, error) {
	deadline := time.Now().Add(time.Duration(c.busy) * time.Millisecond)
	for wait := time.Millisecond; ; wait = min(2*wait, 50*time.Millisecond) {
		conn, err := c.base.Connect(ctx)
		if err == nil || !isBusy(err) || time.Now().Add(wait).After(deadline) {
			return conn, err
		}
		select {
		case <-ctx.Done():
			return nil, errors.Join(err, ctx.Err())
		case <-time.After(wait):
		}
	}
}

// checkConn reads back what the DSN asked for and proves defensive mode by
// behaviour: with SQLITE_DBCONFIG_DEFENSIVE, PRAGMA writable_schema=ON is a
// silent no-op.
func checkConn(ctx context.Context, conn driver.Conn, busy int64, readOnly bool) error {
	q, ok := conn.(driver.QueryerContext)
	e, ok2 := conn.(driver.ExecerContext)
	if !ok || !ok2 {
		return errors.New("connection check: driver connection cannot run queries")
	}
	wantQueryOnly := int64(0)
	if readOnly {
		wantQueryOnly = 1
	}
	checks := []struct {
		pragma string
		want   any
		hint   string
	}{
		{"journal_mode", "wal", "WAL"},
		{"synchronous", int64(2), "FULL"},
		{"foreign_keys", int64(1), "on"},
		{"trusted_schema", int64(0), "off"},
		{"busy_timeout", busy, "milliseconds"},
		{"query_only", wantQueryOnly, ""},
	}
	for _, ch := range checks {
		got, err := queryValue(ctx, q, "PRAGMA "+ch.pragma)
		if err != nil {
			return fmt.Errorf("connection check: PRAGMA %s: %w", ch.pragma, err)
		}
		if got != ch.want {
			return refuse(fmt.Sprintf("ledger: connection check: %s is %v, want %v (%s); the SQLite driver did not apply the DSN", ch.pragma, got, ch.want, ch.hint))
		}
	}
	if _, err := e.ExecContext(ctx, "PRAGMA writable_schema=ON", nil); err != nil {
		return fmt.Errorf("connection check: PRAGMA writable_schema=ON: %w", err)
	}
	ws, err := queryValue(ctx, q, "PRAGMA writable_schema")
	if _, err2 := e.ExecContext(ctx, "PRAGMA writable_schema=OFF", nil); err == nil {
		err = err2
	}
	if err != nil {
		return fmt.Errorf("connection check: PRAGMA writable_schema: %w", err)
	}
	if ws != int64(0) {
		return refuse("ledger: connection check: defensive mode is off (PRAGMA writable_schema could be turned on); the SQLite driver did not apply _defensive=1")
	}
	n, err := queryValue(ctx, q, "SELECT count(*) FROM temp.sqlite_schema")
	if err != nil {
		return fmt.Errorf("connection check: temp schema: %w", err)
	}
	if n != int64(0) {
		return refuse(fmt.Sprintf("ledger: connection check: the temp schema holds %v objects, want none", n))
	}
	return nil
}

// queryValue runs a one-row, one-column query on a driver connection.
// Text comes back as string.
func queryValue(ctx context.Context, q driver.QueryerContext, query string) (any, error) {
	rows, err := q.QueryContext(ctx, query, nil)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	dest := make([]driver.Value, len(rows.Columns()))
	if len(dest) == 0 {
		return nil, errors.New("no columns")
	}
	if err := rows.Next(dest); err != nil {
		if err == io.EOF {
			return nil, errors.New("no rows")
		}
		return nil, err
	}
	if b, ok := dest[0].([]byte); ok {
		return string(b), nil
	}
	return dest[0], nil
}
