package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Head is a chain head as a witness keeps it: which ledger, the last
// event's seq and hash, when it was committed and why.
type Head struct {
	// Ledger is the ledger's identity: the hash of its first event. It
	// is empty for a head given on the command line (it then applies to
	// whichever ledger is checked).
	Ledger string    `json:"ledger"`
	Path   string    `json:"path,omitempty"` // the ledger file, as the process that wrote it saw it
	Seq    int64     `json:"seq"`
	Hash   string    `json:"hash"`
	At     time.Time `json:"at"`
	Why    string    `json:"why"`
	// Source says where a head read back came from (the witness and, for
	// the journal, the uid that sent it); never written.
	Source string `json:"-"`
}

// committedHead is the chain head this process's writer last committed,
// and the ledger's identity once it has one.
type committedHead struct {
	mu       sync.Mutex
	head     chainHead
	identity string
	moved    chan struct{} // receives (coalesced) when head reaches wantSeq
	wantSeq  int64         // HeadReaches' seq: commits below it wake no one
}

// noteCommitted records the head a batch committed. It runs on the
// goroutine leading the batch, after COMMIT: it never blocks.
func (l *Ledger) noteCommitted(h chainHead) {
	if !h.loaded {
		return
	}
	c := &l.committed
	c.mu.Lock()
	if h.seq > c.head.seq {
		c.head = h
	}
	reached := c.head.seq >= c.wantSeq
	c.mu.Unlock()
	if reached {
		c.signal()
	}
}

func (c *committedHead) signal() {
	select {
	case c.moved <- struct{}{}:
	default:
	}
}

// HeadReaches returns the channel that receives, coalesced, once this
// process has committed the event at seq or one after it (at once if it
// already has). It has one reader, the witness committer, which asks again
// for its next seq: commits in between wake no goroutine.
func (l *Ledger) HeadReaches(seq int64) <-chan struct{} {
	c := &l.committed
	c.mu.Lock()
	c.wantSeq = seq
	reached := c.head.seq >= seq
	c.mu.Unlock()
	if reached {
		c.signal()
	}
	return c.moved
}

// loadCommitted reads the file's chain head once at Open: the head this
// process starts from.
func (l *Ledger) loadCommitted(ctx context.Context) error {
	var h chainHead
	if err := l.rdb.QueryRowContext(ctx, "SELECT seq, hash FROM chain_head WHERE id = 1").Scan(&h.seq, &h.hash); err != nil {
		return fmt.Errorf("ledger: %s: read chain head: %w", l.path, err)
	}
	h.loaded = true
	l.noteCommitted(h)
	return nil
}

// CommittedHead is the chain head this process last committed (or found at
// Open): what the witness committer commits. Its identity is read from the
// file the first time the ledger has events; Seq 0 means no events yet.
func (l *Ledger) CommittedHead(ctx context.Context) (Head, error) {
	c := &l.committed
	c.mu.Lock()
	h, id := c.head, c.identity
	c.mu.Unlock()
	out := Head{Path: l.path, Seq: h.seq, Hash: h.hash, At: l.opts.Now().UTC()}
	if h.seq == 0 {
		return out, nil
	}
	if id == "" {
		var err error
		if id, err = l.identity(ctx, l.rdb); err != nil {
			return out, err
		}
		c.mu.Lock()
		c.identity = id
		c.mu.Unlock()
	}
	out.Ledger = id
	return out, nil
}

type rowQuerier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// identity is the ledger's identity: the hash of event 1 ("" when there is
// none). Rewriting it means rewriting the whole chain, which a witness
// shows: the heads it holds for this path then name another ledger.
func (l *Ledger) identity(ctx context.Context, q rowQuerier) (string, error) {
	var id string
	err := q.QueryRowContext(ctx, "SELECT hash FROM events WHERE seq = 1").Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("ledger: %s: read identity: %w", l.path, err)
	}
	return id, nil
}

// FileHead reads the chain head the file holds now (written by any
// process), with the ledger's identity: what watch and verify print for
// the operator to write down.
func (l *Ledger) FileHead(ctx context.Context) (Head, error) {
	out := Head{Path: l.path, At: l.opts.Now().UTC()}
	if err := l.rdb.QueryRowContext(ctx, "SELECT seq, hash FROM chain_head WHERE id = 1").Scan(&out.Seq, &out.Hash); err != nil {
		return out, fmt.Errorf("ledger: %s: read chain head: %w", l.path, err)
	}
	id, err := l.identity(ctx, l.rdb)
	out.Ledger = id
	return out, err
}
