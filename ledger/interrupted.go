package ledger

import (
	"context"
	"errors"
	"fmt"

	"github.com/mcp-guard/mcp-guard/internal/canon"
)

// ErrInterrupted is what RecordCall returns, recording nothing, for a call
// made with IfNotInterrupted when an identical call was interrupted by a
// crash and has not run again under an operator's decision since (L7).
var ErrInterrupted = errors.New("ledger: an identical call was interrupted by a crash")

// unresolvedInterrupted is L7's question of the ledger: an interrupted call
// i (nothing says what it did, no late answer came) that no later
// identical call has run again under an operator's decision (an ask or a
// grant that got as far as starting). It goes through the state index
// (interrupted calls are few) rather than the server/tool index, which
// SQLite would otherwise pick and which holds every call ever made to that
// tool.
const unresolvedInterrupted = `FROM calls i INDEXED BY calls_state_id
	WHERE i.state = 'interrupted' AND i.state <> 'done' AND i.late_at IS NULL
	AND NOT EXISTS (SELECT 1 FROM calls c WHERE c.server = i.server AND c.tool = i.tool
		AND coalesce(c.args_digest, '') = coalesce(i.args_digest, '') AND c.id > i.id
		AND c.decision IN ('ask', 'grant') AND c.state IN ('started', 'done', 'failed', 'cancelled', 'interrupted'))`

// interruptedCallsQuery counts the unresolved interrupted calls with one
// key; interruptedSetQuery lists every unresolved one's key.
const (
	interruptedCallsQuery = "SELECT count(*) " + unresolvedInterrupted +
		" AND i.server = ? AND i.tool = ? AND coalesce(i.args_digest, '') = ?"
	interruptedSetQuery = "SELECT i.server, i.tool, coalesce(i.args_digest, '') " + unresolvedInterrupted
)

// WasInterrupted reports whether a call to server/tool with these exact
// canonical arguments was interrupted by a crash (and nothing says what it
// did), and has not since run again under an operator's decision (L7).
// It reads the ledger as it is now; serve asks the same inside the call's
// own commit instead (CallStart.IfNotInterrupted).
func (l *Ledger) WasInterrupted(ctx context.Context, server, tool string, args []byte) (bool, error) {
	digest := ""
	if len(args) > 0 {
		d, err := canon.Digest(args)
		if err != nil {
			return false, fmt.Errorf("ledger: interrupted calls: %w", err)
		}
		digest = d
	}
	var n int64
	err := l.rdb.QueryRowContext(ctx, interruptedCallsQuery, server, tool, digest).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("ledger: interrupted calls: %w", err)
	}
	return n > 0, nil
}

// interruptedKey is what makes two calls identical for L7.
type interruptedKey struct{ server, tool, argsDigest string }

// interruptedSet is every unresolved interrupted call's key, as the
// writer's connection read them. It lives in writerView: it is dropped
// whenever another connection commits (data_version moves) or a batch
// rolls back, and whenever an operation of our own that could change it
// runs (Tx.run): anything but recording a call (RecordCall) or an outcome.
// So the check before each allowed call costs a map lookup, not a query,
// and is made inside the call's own transaction: nothing another process
// commits can fall between the check and the call's record.
type interruptedSet map[interruptedKey]struct{}

// wasInterrupted is WasInterrupted inside tx, from the writer's set
// (loaded first if another write dropped it).
func (t *Tx) wasInterrupted(k interruptedKey) (bool, error) {
	set := t.l.wview.interrupted
	if set == nil {
		rows, err := t.Query(interruptedSetQuery)
		if err != nil {
			return false, fmt.Errorf("ledger: interrupted calls: %w", err)
		}
		defer rows.Close()
		set = interruptedSet{}
		for rows.Next() {
			var k interruptedKey
			if err := rows.Scan(&k.server, &k.tool, &k.argsDigest); err != nil {
				return false, fmt.Errorf("ledger: interrupted calls: %w", err)
			}
			set[k] = struct{}{}
		}
		if err := rows.Err(); err != nil {
			return false, fmt.Errorf("ledger: interrupted calls: %w", err)
		}
		t.l.wview.interrupted = set
	}
	_, ok := set[k]
	return ok, nil
}
