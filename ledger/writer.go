package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime/trace"
	"strings"
	"sync"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// maxBatch caps how many queued operations share one transaction.
const maxBatch = 256

// beginRetries is how many times BEGIN IMMEDIATE is retried after the busy
// timeout expired (another process held the write lock throughout).
const beginRetries = 2

type request struct {
	op   func(tx *Tx) error
	done chan error
	// lead receives when this request's goroutine is to lead the next
	// batch (see lead); nil for a lazy request, whose caller does not wait.
	lead chan struct{}
	// then, for a lazy request, takes its result in place of done, on the
	// goroutine that led its batch.
	then func(error)
	lazy bool // may wait up to lazyDelay to share a commit with a Write
	// rerun: op has no effect outside the transaction but what running it
	// again overwrites (a call's insert sets its id), so a batch of such
	// ops can run without a savepoint each and, if one fails, run again
	// with them (execBatch).
	rerun bool
}

// lazyDelay is how long lazy writes wait for a Write to share its commit
// with before they commit on their own.
const lazyDelay = 25 * time.Millisecond

// writeQueue holds the operations waiting for a transaction. There is no
// writer goroutine: the writer's connection belongs to whichever goroutine
// leads. A Write that finds no leader runs its batch itself, so a call's
// decision reaches SQLite with no hand-off to another goroutine and back;
// Writes queued meanwhile form the next batch, which the leader hands to
// the oldest of their callers (each caller leads at most one batch in a
// row, so no caller waits behind others' commits).
type writeQueue struct {
	mu        sync.Mutex
	pending   []*request
	leading   bool
	closed    bool
	lazyArmed bool       // a timer will lead the lazy ops pending
	idle      *sync.Cond // broadcast when leading ends
}

// WriteLazy queues op like Write but does not wait: the returned channel
// receives its result. Lazy operations wait up to lazyDelay for a Write to
// lead them into its batch, so a call's outcome usually commits with the
// next call's decision instead of costing an fsync of its own.
func (l *Ledger) WriteLazy(op func(tx *Tx) error) <-chan error {
	done := make(chan error, 1)
	l.writeLazy(op, false, func(err error) { done <- err })
	return done
}

// writeLazy queues op lazily; then receives its result (see request.then).
func (l *Ledger) writeLazy(op func(tx *Tx) error, rerun bool, then func(error)) {
	r := &request{op: op, then: then, lazy: true, rerun: rerun}
	q := &l.wq
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		then(ErrClosed)
		return
	}
	defer q.mu.Unlock()
	q.pending = append(q.pending, r)
	if !q.leading && !q.lazyArmed {
		q.lazyArmed = true
		time.AfterFunc(l.opts.lazyDelay, l.leadLazy)
	}
}

// Write queues op and waits until the transaction holding it has committed
// (or failed). op runs inside its own savepoint: if it returns an error (or
// panics), its changes are rolled back and the other operations of the
// batch still commit. The error returned is op's own error, or the batch's
// commit error.
//
// If ctx is done before op is queued, Write returns ctx.Err() and op never
// runs. Once queued, Write waits for the outcome whatever ctx does, since op
// may already be committed: to record what happened after a caller gave up,
// pass context.WithoutCancel(ctx).
//
// op may run on the calling goroutine or another Write's: it must not call
// Write (that would deadlock), must not keep tx after returning, and must
// not issue transaction control statements.
func (l *Ledger) Write(ctx context.Context, op func(tx *Tx) error) error {
	return l.write(ctx, op, false)
}

func (l *Ledger) write(ctx context.Context, op func(tx *Tx) error, rerun bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	r := &request{op: op, done: make(chan error, 1), lead: make(chan struct{}, 1), rerun: rerun}
	q := &l.wq
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return ErrClosed
	}
	q.pending = append(q.pending, r)
	first := !q.leading
	q.leading = true
	q.mu.Unlock()
	if first {
		l.lead()
	}
	for {
		select {
		case err := <-r.done:
			return err
		case <-r.lead:
			l.lead()
		}
	}
}

// leadLazy leads the lazy operations no Write took within lazyDelay.
func (l *Ledger) leadLazy() {
	q := &l.wq
	q.mu.Lock()
	q.lazyArmed = false
	if q.leading || len(q.pending) == 0 {
		q.mu.Unlock()
		return
	}
	q.leading = true
	q.mu.Unlock()
	l.lead()
}

// lead runs one batch of the pending operations (the caller holds the
// lead), then passes the lead to the oldest waiting Write, or gives it up:
// lazy operations left alone are led by a timer after lazyDelay.
func (l *Ledger) lead() {
	q := &l.wq
	q.mu.Lock()
	n := min(len(q.pending), maxBatch)
	batch := make([]*request, n)
	copy(batch, q.pending)
	q.pending = append(q.pending[:0], q.pending[n:]...)
	q.mu.Unlock()

	if n > 0 {
		errs := make([]error, n)
		err := l.execBatch(batch, errs)
		l.prepareWanted()
		for i, r := range batch {
			e := err
			if errs[i] != nil {
				e = errs[i]
			}
			if r.then != nil {
				r.then(e)
			} else {
				r.done <- e
			}
		}
	}

	q.mu.Lock()
	defer q.mu.Unlock()
	for _, r := range q.pending {
		if !r.lazy {
			r.lead <- struct{}{} // the lead passes on: q.leading stays true
			return
		}
	}
	q.leading = false
	q.idle.Broadcast()
	if len(q.pending) > 0 && !q.lazyArmed && !q.closed {
		q.lazyArmed = true
		time.AfterFunc(l.opts.lazyDelay, l.leadLazy)
	}
}

// closeQueue refuses new writes and commits every queued one, leading what
// no Write leads.
func (l *Ledger) closeQueue() {
	q := &l.wq
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	for {
		for q.leading {
			q.idle.Wait()
		}
		if len(q.pending) == 0 {
			return
		}
		q.leading = true
		q.mu.Unlock()
		l.lead()
		q.mu.Lock()
	}
}

// execBatch runs batch in one transaction. errs receives each op's own error;
// the return value is the batch's error (begin, savepoint bookkeeping,
// commit), which applies to every op that did not fail by itself.
//
// The transaction is run with BEGIN IMMEDIATE and COMMIT statements on the
// writer's own connection, every statement prepared once: database/sql's Tx
// would start a goroutine and re-bind each statement for every batch.
func (l *Ledger) execBatch(batch []*request, errs []error) error {
	if rerunnable(batch) {
		if err, ok := l.runBatch(batch, errs, false); ok {
			return err
		}
	}
	err, _ := l.runBatch(batch, errs, true)
	return err
}

// rerunnable reports whether every op of batch may run twice.
func rerunnable(batch []*request) bool {
	for _, r := range batch {
		if !r.rerun {
			return false
		}
	}
	return true
}

// runBatch runs batch in one transaction. With savepoints, each op runs in
// its own: errs receives each op's own error and the others commit. Without
// (a batch of rerunnable ops: calls' decisions and outcomes, two statements
// fewer per op), the first op that fails rolls the transaction back and ok
// is false, for execBatch to run the batch again with them. An error of the
// batch itself (begin, savepoint bookkeeping, commit) is returned with ok
// true.
func (l *Ledger) runBatch(batch []*request, errs []error, savepoints bool) (err error, ok bool) {
	ctx := context.Background() // ops outlive their callers' contexts once queued
	t := &Tx{l: l, q: l.wconn, ctx: ctx}
	if err := l.begin(t); err != nil {
		return err, true
	}
	trace.Log(ctx, TraceStage, "ledger BEGIN done")
	done := false
	defer func() {
		if !done {
			t.done = true
			l.wview = writerView{} // read the file again next time
			l.rollback(ctx)
		}
	}()
	if err := l.recheckSchema(t); err != nil {
		return err, true
	}
	for i, r := range batch {
		if !savepoints {
			if t.run(r.op) != nil {
				return nil, false
			}
			continue
		}
		if _, err := t.exec("SAVEPOINT op"); err != nil {
			return fmt.Errorf("ledger: write: savepoint: %w", err), true
		}
		saved := t.head
		errs[i] = t.run(r.op)
		if errs[i] != nil {
			if _, err := t.exec("ROLLBACK TO op"); err != nil {
				return fmt.Errorf("ledger: write: rollback to savepoint: %w", err), true
			}
			t.head = saved
		}
		if _, err := t.exec("RELEASE op"); err != nil {
			return fmt.Errorf("ledger: write: release savepoint: %w", err), true
		}
	}
	if err := t.saveHead(); err != nil {
		return err, true
	}
	trace.Log(ctx, TraceStage, "ledger COMMIT")
	if _, err := t.exec("COMMIT"); err != nil {
		return fmt.Errorf("ledger: write: commit: %w", err), true
	}
	trace.Log(ctx, TraceStage, "ledger committed")
	t.done = true
	done = true
	l.known.afterCommit(t.dropped, l.wview.labels)
	if t.schemaChanged {
		l.wview = writerView{}
	} else if t.head.loaded {
		l.wview.head = t.head
	}
	l.noteCommitted(t.head)
	return nil, true
}

// rollback ends a failed batch's transaction. A failed COMMIT may already
// have ended it, and then ROLLBACK has nothing to do.
func (l *Ledger) rollback(ctx context.Context) {
	_, _ = l.wconn.ExecContext(ctx, "ROLLBACK")
}

// begin runs BEGIN IMMEDIATE, retrying a few times when another process held
// the write lock for the whole busy timeout.
func (l *Ledger) begin(t *Tx) error {
	for attempt := 0; ; attempt++ {
		_, err := t.exec("BEGIN IMMEDIATE")
		if err == nil {
			return nil
		}
		if attempt >= beginRetries || !isBusy(err) {
			return fmt.Errorf("ledger: write: begin: %w", err)
		}
	}
}

func isBusy(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_BUSY
}

// writerView is what the writer's connection knew when its last batch
// ended well: PRAGMA data_version then (it moves only when another
// connection commits), whether the schema was checked at it, and the chain
// head our commit left. While data_version has not moved, nothing but this
// connection wrote the file: the schema is as checked and the head is ours,
// so a batch reads neither again.
type writerView struct {
	valid       bool
	dataVersion int64
	head        chainHead
	// interrupted is L7's set of unresolved interrupted calls, once an
	// operation needed it (interrupted.go); labels the live labels of each
	// scope a call's LabelsCheck read (labelcheck.go).
	interrupted interruptedSet
	labels      labelsView
}

// recheckSchema re-verifies the whole schema when another connection changed
// it since we last looked (PRAGMA schema_version moved), before any of our
// writes could fire a planted trigger. When no other connection has
// committed at all since our last batch (data_version), it only takes the
// chain head that batch left.
func (l *Ledger) recheckSchema(t *Tx) error {
	var dv int64
	if err := t.queryRow("PRAGMA data_version").Scan(&dv); err != nil {
		return fmt.Errorf("ledger: write: read data_version: %w", err)
	}
	if l.wview.valid && dv == l.wview.dataVersion {
		if l.wview.head.loaded {
			t.head, t.base = l.wview.head, l.wview.head
		}
		return nil
	}
	l.wview = writerView{}
	var v int64
	if err := t.queryRow("PRAGMA schema_version").Scan(&v); err != nil {
		return fmt.Errorf("ledger: write: read schema_version: %w", err)
	}
	if v != l.schemaVer {
		if err := checkSchema(t.ctx, l.wconn, l.path, l.schema); err != nil {
			return err
		}
		l.schemaVer = v
	}
	l.wview.valid, l.wview.dataVersion = true, dv
	return nil
}

// Tx is the transaction an operation runs in (see Write). Its statements run
// on the writer connection; everything done through it commits or rolls back
// with the operation's savepoint.
type Tx struct {
	l    *Ledger
	q    sqlConn // the writer's connection (or, in benchmarks, another's transaction)
	ctx  context.Context
	head chainHead // the chain's head after this batch's events so far
	// schemaChanged: an op ran a statement that may change the schema.
	schemaChanged bool
	base          chainHead // the head as read from the database
	rows          []*sql.Rows
	done          bool
	// touched are the bound rows the operation changed since its last
	// event (see touch).
	touched []rowRef
	// keepSets: the operation running cannot have changed which calls
	// count as interrupted for L7, nor any scope's labels (it recorded a
	// call with RecordCall, or an outcome). Any other operation drops the
	// writer's sets (dropped), and the labels the process knows.
	keepSets bool
	dropped  bool
}

func (t *Tx) run(op func(*Tx) error) (err error) {
	t.keepSets = false
	defer func() {
		if !t.keepSets {
			t.l.wview.interrupted, t.l.wview.labels = nil, nil
			t.dropped = true
		}
		for _, r := range t.rows {
			r.Close()
		}
		t.rows = t.rows[:0]
		if p := recover(); p != nil {
			err = fmt.Errorf("ledger: write: operation panicked: %v", p)
		}
		if err == nil && len(t.touched) > 0 {
			err = fmt.Errorf("ledger: write: %s %v changed with no event after it to bind it", t.touched[0].table, t.touched[0].key)
		}
		t.touched = t.touched[:0]
	}()
	return op(t)
}

// Now is the ledger's clock.
func (t *Tx) Now() time.Time { return t.l.opts.Now() }

var errTxDone = errors.New("ledger: Tx used after its operation returned")

// transactionControl reports whether query begins with a statement that would
// break the batch's transaction.
func transactionControl(query string) bool {
	f := strings.Fields(query)
	if len(f) == 0 {
		return false
	}
	switch strings.ToUpper(strings.TrimRight(f[0], ";")) {
	case "BEGIN", "COMMIT", "END", "ROLLBACK", "SAVEPOINT", "RELEASE", "ATTACH", "DETACH", "VACUUM":
		return true
	}
	return false
}

// schemaChange reports whether query may change the schema.
func schemaChange(query string) bool {
	f := strings.Fields(query)
	if len(f) == 0 {
		return false
	}
	switch strings.ToUpper(f[0]) {
	case "CREATE", "DROP", "ALTER", "PRAGMA":
		return true
	}
	return false
}

func (t *Tx) check(query string) error {
	if t.done {
		return errTxDone
	}
	if transactionControl(query) {
		return fmt.Errorf("ledger: write: %q is not allowed inside an operation", strings.Fields(query)[0])
	}
	if schemaChange(query) {
		// Our own schema change leaves data_version where it was: check
		// the schema again at the next batch.
		t.l.wview = writerView{}
		t.schemaChanged = true
	}
	return nil
}

// Exec runs a statement in the operation's transaction. A statement that
// inserts or changes a row of a bound table (sessions, calls, approvals,
// pins) must be followed by touch and an event that binds the row (CAS
// touches its row itself): an operation that leaves a touched row unbound
// fails.
func (t *Tx) Exec(query string, args ...any) (sql.Result, error) {
	if err := t.check(query); err != nil {
		return nil, err
	}
	return t.exec(query, args...)
}

// QueryRow runs a query expected to return at most one row.
func (t *Tx) QueryRow(query string, args ...any) *sql.Row {
	return t.queryRow(query, args...)
}

// Query runs a query. Rows left open are closed when the operation returns.
func (t *Tx) Query(query string, args ...any) (*sql.Rows, error) {
	if err := t.check(query); err != nil {
		return nil, err
	}
	var rows *sql.Rows
	var err error
	if st := t.stmt(query); st != nil {
		rows, err = st.QueryContext(t.ctx, args...)
	} else {
		rows, err = t.q.QueryContext(t.ctx, query, args...)
	}
	if err == nil {
		t.rows = append(t.rows, rows)
	}
	return rows, err
}

// sqlConn is what a Tx runs its statements on: *sql.Conn or *sql.Tx.
type sqlConn interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// maxWriterStmts bounds the writer's statement cache.
const maxWriterStmts = 128

// stmt returns query's cached statement, prepared on the writer's
// connection, or nil (then the query is remembered and prepared after the
// batch commits: SQLite spends most of a small write parsing its SQL).
func (t *Tx) stmt(query string) *sql.Stmt {
	if t.q != t.l.wconn {
		return nil
	}
	if st := t.l.wstmts[query]; st != nil {
		return st
	}
	if len(t.l.wstmts)+len(t.l.wwant) < maxWriterStmts {
		t.l.wwant[query] = true
	}
	return nil
}

func (t *Tx) exec(query string, args ...any) (sql.Result, error) {
	if st := t.stmt(query); st != nil {
		return st.ExecContext(t.ctx, args...)
	}
	return t.q.ExecContext(t.ctx, query, args...)
}

func (t *Tx) queryRow(query string, args ...any) *sql.Row {
	if st := t.stmt(query); st != nil {
		return st.QueryRowContext(t.ctx, args...)
	}
	return t.q.QueryRowContext(t.ctx, query, args...)
}

// prepareWanted prepares, on the writer's connection while no transaction
// holds it, the statements the last batch ran unprepared.
func (l *Ledger) prepareWanted() {
	for q := range l.wwant {
		delete(l.wwant, q)
		st, err := l.wconn.PrepareContext(context.Background(), q)
		if err != nil {
			continue // it runs unprepared, as before
		}
		l.wstmts[q] = st
	}
}
