package ledger

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// CallEvent is the seq and hash of call id's first event (its decision:
// call.started, call.refused or call.waiting) or, with last, of its latest
// one (its outcome, once committed). ok is false when the call has no
// event yet.
func (l *Ledger) CallEvent(ctx context.Context, id int64, last bool) (seq int64, hash string, ok bool, err error) {
	q := "SELECT seq, hash FROM events WHERE subject = ? ORDER BY seq LIMIT 1"
	if last {
		q = "SELECT seq, hash FROM events WHERE subject = ? ORDER BY seq DESC LIMIT 1"
	}
	err = l.rdb.QueryRowContext(ctx, q, callSubject(id)).Scan(&seq, &hash)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return 0, "", false, nil
	case err != nil:
		return 0, "", false, fmt.Errorf("ledger: event of call %d: %w", id, err)
	}
	return seq, hash, true, nil
}
