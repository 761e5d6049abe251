package ledger

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"

	"github.com/mcp-guard/mcp-guard/internal/canon"
)

// chainHead is the last event of the chain as this transaction sees it.
type chainHead struct {
	loaded bool
	seq    int64
	hash   string
}

// eventHash is hex sha256 of the canonical encoding of
// {"seq","at","kind","subject","body","prev"}, body being the stored
// canonical JSON bytes. body must already be canonical (AppendEvent's own
// encoding; Verify checks a stored body first): it is written as it is, so
// the envelope is hashed directly, in RFC 8785 member order, without a
// second encoding pass, and without copying body (it may hold megabytes of
// a call's arguments).
func eventHash(seq, at int64, kind, subject string, body []byte, prev string) (string, error) {
	head := make([]byte, 0, 32)
	head = append(head, `{"at":`...)
	head = strconv.AppendInt(head, at, 10)
	head = append(head, `,"body":`...)
	tail := make([]byte, 0, len(kind)+len(subject)+len(prev)+64)
	var err error
	for _, f := range [...]struct{ name, value string }{{`,"kind":`, kind}, {`,"prev":`, prev}} {
		tail = append(tail, f.name...)
		if tail, err = canon.AppendString(tail, f.value); err != nil {
			return "", err
		}
	}
	tail = append(tail, `,"seq":`...)
	tail = strconv.AppendInt(tail, seq, 10)
	tail = append(tail, `,"subject":`...)
	if tail, err = canon.AppendString(tail, subject); err != nil {
		return "", err
	}
	tail = append(tail, '}')
	h := sha256.New()
	h.Write(head)
	h.Write(body)
	h.Write(tail)
	return hex.EncodeToString(h.Sum(nil)), nil
}

// saveHead writes the chain head the batch's events moved to, once, before
// the batch commits. It is a compare-and-set on the head read when the batch
// appended its first event.
func (t *Tx) saveHead() error {
	if !t.head.loaded || t.head.seq == t.base.seq {
		return nil
	}
	res, err := t.exec("UPDATE chain_head SET seq = ?, hash = ? WHERE id = 1 AND seq = ?", t.head.seq, t.head.hash, t.base.seq)
	if err != nil {
		return fmt.Errorf("ledger: write: update chain head: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return fmt.Errorf("ledger: write: chain head moved under us (rows=%d, err=%v)", n, err)
	}
	return nil
}

// AppendEvent appends an event to the hash chain in this transaction. body is
// encoded with canon.Marshal; if it cannot be encoded nothing is written and
// the error is returned (the operation should return it too). The chain head
// is read from the database the first time in a batch and tracked in memory
// after that (written back once, when the batch commits); a rolled-back
// operation's events are forgotten.
func (t *Tx) AppendEvent(kind, subject string, body any) (int64, error) {
	if t.done {
		return 0, errTxDone
	}
	if kind == "" || subject == "" {
		return 0, fmt.Errorf("ledger: append event: kind and subject are required")
	}
	body, err := t.bindTouched(body)
	if err != nil {
		return 0, fmt.Errorf("ledger: append event %s %s: %w", kind, subject, err)
	}
	b, err := canon.Marshal(body)
	if err != nil {
		return 0, fmt.Errorf("ledger: append event %s %s: body: %w", kind, subject, err)
	}
	if !t.head.loaded {
		var h chainHead
		if err := t.queryRow("SELECT seq, hash FROM chain_head WHERE id = 1").Scan(&h.seq, &h.hash); err != nil {
			return 0, fmt.Errorf("ledger: append event: read chain head: %w", err)
		}
		h.loaded = true
		t.head, t.base = h, h
	}
	seq := t.head.seq + 1
	at := t.l.opts.Now().UnixMilli()
	hash, err := eventHash(seq, at, kind, subject, b, t.head.hash)
	if err != nil {
		return 0, fmt.Errorf("ledger: append event %s %s: hash: %w", kind, subject, err)
	}
	if _, err := t.exec("INSERT INTO events (seq, at, kind, subject, body, prev_hash, hash) VALUES (?, ?, ?, ?, ?, ?, ?)",
		seq, at, kind, subject, b, t.head.hash, hash); err != nil {
		return 0, fmt.Errorf("ledger: append event %s %s: %w", kind, subject, err)
	}
	t.head = chainHead{loaded: true, seq: seq, hash: hash}
	return seq, nil
}
