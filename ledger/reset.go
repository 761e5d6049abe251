package ledger

import (
	"context"
	"database/sql"
	"fmt"
)

const resetSubject = "reset:sessions"

// RequestReset records the operator's decision to let every serve process's
// host sessions continue after they were stopped by a limit (consecutive
// denials). Running processes see it through ResetVersion.
func (l *Ledger) RequestReset(ctx context.Context, reason string) error {
	err := l.Write(ctx, func(tx *Tx) error {
		_, err := tx.AppendEvent("operator.reset", resetSubject, map[string]any{"reason": reason})
		return err
	})
	if err != nil {
		return fmt.Errorf("ledger: reset: %w", err)
	}
	return nil
}

// resetVersionQuery repeats the subject index's term so the index is used.
const resetVersionQuery = `SELECT max(seq) FROM events WHERE subject = ? AND (subject < 'call:' OR subject >= 'call;')`

// ResetVersion changes whenever RequestReset is recorded; it costs one index
// lookup.
func (l *Ledger) ResetVersion(ctx context.Context) (int64, error) {
	var seq sql.NullInt64
	if err := l.rdb.QueryRowContext(ctx, resetVersionQuery, resetSubject).Scan(&seq); err != nil {
		return 0, fmt.Errorf("ledger: reset version: %w", err)
	}
	return seq.Int64, nil
}
