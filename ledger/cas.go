package ledger

import (
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// isIdent reports whether s is a plain lower-case SQL identifier.
func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if !(c == '_' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// CAS moves one row from fromState to toState, setting the columns in set in
// the same statement:
//
//	UPDATE table SET state = ?, <set...> WHERE idCol = ? AND state = ?
//
// It returns ErrConflict unless exactly one row changed. table, idCol and the
// keys of set must name a table with a state column and its columns as the
// migrations created them; nothing else is accepted.
func (t *Tx) CAS(table, idCol string, id any, fromState, toState string, set map[string]any) error {
	if t.done {
		return errTxDone
	}
	cols, ok := t.l.schema.columns[table]
	if !ok || !isIdent(table) || !cols["state"] {
		return fmt.Errorf("ledger: cas: %q is not a table with a state column", table)
	}
	if !cols[idCol] || !isIdent(idCol) || idCol == "state" {
		return fmt.Errorf("ledger: cas: %q is not a column of %s", idCol, table)
	}
	keys := make([]string, 0, len(set))
	for k := range set {
		if !cols[k] || !isIdent(k) || k == "state" || k == idCol {
			return fmt.Errorf("ledger: cas: cannot set %q on %s", k, table)
		}
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var q strings.Builder
	args := make([]any, 0, len(keys)+3)
	fmt.Fprintf(&q, `UPDATE "%s" SET state = ?`, table)
	args = append(args, toState)
	for _, k := range keys {
		fmt.Fprintf(&q, `, "%s" = ?`, k)
		args = append(args, set[k])
	}
	fmt.Fprintf(&q, ` WHERE "%s" = ? AND state = ?`, idCol)
	args = append(args, id, fromState)
	if b := t.l.bound[table]; b != nil && b.table.key == idCol {
		return t.casReturning(table, id, fromState, toState, q.String()+b.returning, args...)
	}
	res, err := t.exec(q.String(), args...)
	if err != nil {
		return fmt.Errorf("ledger: cas %s %v %s->%s: %w", table, id, fromState, toState, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("ledger: cas %s %v: %w", table, id, err)
	}
	if n != 1 {
		return fmt.Errorf("ledger: cas %s %v %s->%s: %w", table, id, fromState, toState, ErrConflict)
	}
	t.touch(table, id)
	return nil
}

// casReturning runs query, a CAS's UPDATE of one bound row with its
// boundQuery.returning: the row as written comes back with it, so the event
// that binds it needs no read back. No row: the state was not fromState.
func (t *Tx) casReturning(table string, id any, fromState, toState, query string, args ...any) error {
	var quoted string
	err := t.queryRow(query, args...).Scan(&quoted)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("ledger: cas %s %v %s->%s: %w", table, id, fromState, toState, ErrConflict)
	}
	if err != nil {
		return fmt.Errorf("ledger: cas %s %v %s->%s: %w", table, id, fromState, toState, err)
	}
	t.touchReturned(table, id, quoted)
	return nil
}
