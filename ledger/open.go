package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Options tune a Ledger. The zero value is usable.
type Options struct {
	// BusyTimeout is how long a connection waits for another process's
	// lock before failing (default 5s).
	BusyTimeout time.Duration
	// LeaseTTL is how long a session may go without a heartbeat before its
	// started calls count as interrupted (default 15s). Heartbeats run every
	// LeaseTTL/3.
	LeaseTTL time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// lazyDelay replaces the const lazyDelay (tests).
	lazyDelay time.Duration
}

func (o Options) withDefaults() Options {
	if o.BusyTimeout <= 0 {
		o.BusyTimeout = 5 * time.Second
	}
	if o.LeaseTTL <= 0 {
		o.LeaseTTL = 15 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.lazyDelay <= 0 {
		o.lazyDelay = lazyDelay
	}
	return o
}

// readerConns is the size of the reader pool; all of them are opened (and so
// checked) at Open.
const readerConns = 4

// Ledger is an open ledger file. It is safe for concurrent use.
type Ledger struct {
	path   string
	opts   Options
	wdb    *sql.DB // the writer: one connection, used only by the goroutine leading a batch
	wconn  *sql.Conn
	rdb    *sql.DB // readers: query_only
	schema *schemaInfo
	bound  map[string]*boundQuery // how each bound table's rows are digested
	// insertCall inserts a call; outcome moves a started call to its
	// outcome, and outcomeReturning does and returns the row's content.
	insertCall, outcome, outcomeReturning string
	started                               startedRows

	// The writer's state, used only by the goroutine leading a batch
	// (writeQueue).
	wq        writeQueue
	schemaVer int64 // the schema version last checked
	wview     writerView
	// Statements prepared on the writer's connection, and those the last
	// batch ran unprepared (prepared between batches, when the connection
	// is free).
	wstmts map[string]*sql.Stmt
	wwant  map[string]bool

	hbMu     sync.Mutex // guards hbClosed and hbWG.Add
	hbClosed bool
	hbWG     sync.WaitGroup
	closing  chan struct{} // closed when Close starts: heartbeats stop

	stmtMu sync.Mutex // guards stmts; nil after Close
	stmts  map[string]*sql.Stmt

	closeOnce sync.Once
	closeErr  error

	committed committedHead // the head this process last committed (head.go)
	known     knownLabels   // each scope's labels as last read (labelcheck.go)
}

// Open opens (creating if needed) the ledger at path. See the package doc for
// what it checks and refuses.
func Open(ctx context.Context, path string, opts Options) (*Ledger, error) {
	opts = opts.withDefaults()
	if path == "" || path == ":memory:" || strings.HasPrefix(path, "file:") {
		return nil, fmt.Errorf("ledger: open %q: need the path of a file", path)
	}
	if strings.ContainsAny(path, "?#\x00") {
		return nil, fmt.Errorf("ledger: open %q: the path may not contain '?', '#' or NUL; fix with: choose another ledger path", path)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("ledger: open %s: %w", path, err)
	}
	path = abs
	if err := prepareDir(filepath.Dir(path)); err != nil {
		return nil, err
	}
	if _, err := createOwnerOnly(path); err != nil {
		return nil, err
	}
	if err := checkFiles(path); err != nil {
		return nil, err
	}
	want, err := expectedSchema(ctx, len(migrations()))
	if err != nil {
		return nil, err
	}
	bound, err := boundQueries(want)
	if err != nil {
		return nil, err
	}

	busy := opts.BusyTimeout.Milliseconds()
	if busy < 1 {
		busy = 1
	}
	l := &Ledger{
		path:             path,
		opts:             opts,
		schema:           want,
		bound:            bound,
		insertCall:       insertCallSQL(),
		outcome:          outcomeSQL(""),
		outcomeReturning: outcomeSQL(bound["calls"].returning),
		wstmts:           map[string]*sql.Stmt{},
		wwant:            map[string]bool{},
		closing:          make(chan struct{}),
		stmts:            map[string]*sql.Stmt{},
	}
	l.committed.moved = make(chan struct{}, 1)
	l.wq.idle = sync.NewCond(&l.wq.mu)
	if l.wdb, err = openDB(path, busy, false); err != nil {
		return nil, err
	}
	l.wdb.SetMaxOpenConns(1)
	l.wdb.SetMaxIdleConns(1)
	l.wdb.SetConnMaxLifetime(0)
	l.wdb.SetConnMaxIdleTime(0)
	if l.rdb, err = openDB(path, busy, true); err != nil {
		l.wdb.Close()
		return nil, err
	}
	l.rdb.SetMaxOpenConns(readerConns)
	l.rdb.SetMaxIdleConns(readerConns)

	fail := func(err error) (*Ledger, error) {
		return nil, errors.Join(err, l.wdb.Close(), l.rdb.Close())
	}
	// The writer's first connection is opened (and checked) here; SQLite has
	// now created -wal and -shm, so check them too.
	if l.schemaVer, err = l.migrate(ctx); err != nil {
		return fail(err)
	}
	if err := checkFiles(path); err != nil {
		return fail(err)
	}
	if err := l.openReaders(ctx); err != nil {
		return fail(err)
	}
	if err := l.loadCommitted(ctx); err != nil {
		return fail(err)
	}
	if l.wconn, err = l.wdb.Conn(ctx); err != nil {
		return fail(fmt.Errorf("ledger: open %s: %w", path, err))
	}
	return l, nil
}

// openReaders opens every reader connection at once, so each is checked now
// rather than on first use, and checks the schema through one of them.
func (l *Ledger) openReaders(ctx context.Context) error {
	conns := make([]*sql.Conn, 0, readerConns)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for range readerConns {
		c, err := l.rdb.Conn(ctx)
		if err != nil {
			return err
		}
		conns = append(conns, c)
	}
	return checkSchema(ctx, conns[0], l.path, l.schema)
}

// Path is the absolute path of the database file.
func (l *Ledger) Path() string { return l.path }

// Now is the ledger's clock (Options.Now).
func (l *Ledger) Now() time.Time { return l.opts.Now() }

// Close stops the session heartbeats, lets the writer commit everything
// already queued, and closes the database. It is safe to call more than once.
func (l *Ledger) Close() error {
	l.closeOnce.Do(func() {
		l.hbMu.Lock()
		l.hbClosed = true
		close(l.closing)
		l.hbMu.Unlock()
		l.hbWG.Wait()

		l.closeQueue()

		var errs []error
		for _, st := range l.wstmts {
			errs = append(errs, st.Close())
		}
		l.stmtMu.Lock()
		for _, st := range l.stmts {
			errs = append(errs, st.Close())
		}
		l.stmts = nil
		l.stmtMu.Unlock()

		l.closeErr = errors.Join(append(errs, l.wconn.Close(), l.wdb.Close(), l.rdb.Close())...)
		if l.closeErr != nil {
			l.closeErr = fmt.Errorf("ledger: close %s: %w", l.path, l.closeErr)
		}
	})
	return l.closeErr
}
