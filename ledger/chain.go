package ledger

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

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
// canonical JSON bytes.
func eventHash(seq, at int64, kind, subject string, body []byte, prev string) (string, error) {
	b, err := canon.Marshal(map[string]any{
		"seq":     seq,
		"at":      at,
		"kind":    kind,
		"subject": subject,
		"body":    json.RawMessage(body),
		"prev":    prev,
	})
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// AppendEvent appends an event to the hash chain in this transaction. body is
// encoded with canon.Marshal; if it cannot be encoded nothing is written and
// the error is returned (the operation should return it too). The chain head
// is read from the database the first time in a batch and tracked in memory
// after that; a rolled-back operation's events are forgotten.
func (t *Tx) AppendEvent(kind, subject string, body any) (int64, error) {
	if t.done {
		return 0, errTxDone
	}
	if kind == "" || subject == "" {
		return 0, fmt.Errorf("ledger: append event: kind and subject are required")
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
		t.head = h
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
	res, err := t.exec("UPDATE chain_head SET seq = ?, hash = ? WHERE id = 1 AND seq = ?", seq, hash, seq-1)
	if err != nil {
		return 0, fmt.Errorf("ledger: append event: update chain head: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || n != 1 {
		return 0, fmt.Errorf("ledger: append event: chain head moved under us (rows=%d, err=%v)", n, err)
	}
	t.head = chainHead{loaded: true, seq: seq, hash: hash}
	return seq, nil
}
