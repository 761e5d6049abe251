package ledger

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// boundRow is what the chain says a bound row holds: its digest as of event
// seq (of kind).
type boundRow struct {
	digest string
	seq    int64
	kind   string
	first  int64 // the event that first bound it (created it)
}

// expectedRows is the state of the bound tables the chain describes:
// table -> key -> row.
type expectedRows map[string]map[string]boundRow

// replay applies an event's "rows" binding, if it has one.
func (e expectedRows) replay(seq int64, kind string, body []byte) error {
	if !bytes.Contains(body, []byte(`"rows":{`)) {
		return nil
	}
	var b struct {
		Rows map[string]string `json:"rows"`
	}
	if err := json.Unmarshal(body, &b); err != nil {
		return err
	}
	for ref, d := range b.Rows {
		table, key, ok := strings.Cut(ref, ":")
		if !ok || table == "" || key == "" {
			return fmt.Errorf("row %q is not table:key", ref)
		}
		m := e[table]
		if m == nil {
			m = map[string]boundRow{}
			e[table] = m
		}
		first := seq
		if old, ok := m[key]; ok {
			first = old.first
		}
		m[key] = boundRow{digest: d, seq: seq, kind: kind, first: first}
	}
	return nil
}

// rowProblem is one bound row that differs from the chain.
type rowProblem struct {
	key     string
	seq     int64
	problem string
	first   int64 // for an edited row: the event that created it
}

// keyLess orders keys as their table does: integers numerically.
func keyLess(a, b string) bool {
	ai, aerr := strconv.ParseInt(a, 10, 64)
	bi, berr := strconv.ParseInt(b, 10, 64)
	if aerr == nil && berr == nil {
		return ai < bi
	}
	return a < b
}

// verifyRows compares every bound table with the rows the chain describes,
// table by table, and records the first row (by key) that was edited,
// deleted or inserted. stop is true when a problem was recorded.
func (l *Ledger) verifyRows(ctx context.Context, tx *sql.Tx, rep *VerifyReport, want expectedRows) (stop bool, err error) {
	for _, bt := range boundTables() {
		q := l.bound[bt.name]
		exp := want[bt.name]
		first, err := l.verifyTable(ctx, tx, rep, q, exp)
		if err != nil {
			return false, err
		}
		if first != nil {
			rep.BadSeq, rep.Table, rep.Key = first.seq, bt.name, first.key
			rep.Problem = fmt.Sprintf("%s %s=%s: %s", bt.name, bt.key, first.key, first.problem)
			if bt.name == "calls" && first.first > 0 {
				cols, err := callColumnsDiffer(ctx, tx, first.key, first.first)
				if err != nil {
					return false, err
				}
				if len(cols) > 0 {
					rep.Column = cols[0]
					rep.Problem += fmt.Sprintf("; %s differ from event %d, which recorded the call", strings.Join(cols, ", "), first.first)
				}
			}
			return true, nil
		}
	}
	return false, nil
}

// verifyTable returns the first row of one table, by key, that differs from
// exp.
func (l *Ledger) verifyTable(ctx context.Context, tx *sql.Tx, rep *VerifyReport, q *boundQuery, exp map[string]boundRow) (*rowProblem, error) {
	rows, err := tx.QueryContext(ctx, q.all)
	if err != nil {
		return nil, fmt.Errorf("ledger: verify %s: %w", q.table.name, err)
	}
	defer rows.Close()
	var first *rowProblem
	seen := 0
	for rows.Next() {
		var key any
		var quoted string
		if err := rows.Scan(&key, &quoted); err != nil {
			return nil, fmt.Errorf("ledger: verify %s: %w", q.table.name, err)
		}
		d := q.rowDigest(quoted)
		k, err := keyString(key)
		if err != nil {
			return nil, fmt.Errorf("ledger: verify %s: %w", q.table.name, err)
		}
		rep.Rows++
		w, ok := exp[k]
		if ok {
			seen++
		}
		switch {
		case first != nil:
		case !ok:
			first = &rowProblem{key: k, problem: "inserted: no event records this row (added outside mcp-guard?)"}
		case w.digest != d:
			first = &rowProblem{key: k, seq: w.seq, first: w.first, problem: fmt.Sprintf(
				"edited: its content is not what event %d (%s) recorded", w.seq, w.kind)}
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("ledger: verify %s: %w", q.table.name, err)
	}
	if seen == len(exp) {
		return first, nil
	}
	// Some rows the chain records are gone: the first of them, by key.
	present := map[string]bool{}
	if err := l.presentKeys(ctx, tx, q, present); err != nil {
		return nil, err
	}
	var missing []string
	for k := range exp {
		if !present[k] {
			missing = append(missing, k)
		}
	}
	sort.Slice(missing, func(i, j int) bool { return keyLess(missing[i], missing[j]) })
	if len(missing) > 0 && (first == nil || keyLess(missing[0], first.key)) {
		w := exp[missing[0]]
		first = &rowProblem{key: missing[0], seq: w.seq, problem: fmt.Sprintf(
			"deleted: event %d (%s) records this row, the table no longer holds it", w.seq, w.kind)}
	}
	return first, nil
}

func (l *Ledger) presentKeys(ctx context.Context, tx *sql.Tx, q *boundQuery, present map[string]bool) error {
	rows, err := tx.QueryContext(ctx, fmt.Sprintf(`SELECT "%s" FROM "%s"`, q.table.key, q.table.name))
	if err != nil {
		return fmt.Errorf("ledger: verify %s: %w", q.table.name, err)
	}
	defer rows.Close()
	for rows.Next() {
		var key any
		if err := rows.Scan(&key); err != nil {
			return fmt.Errorf("ledger: verify %s: %w", q.table.name, err)
		}
		k, err := keyString(key)
		if err != nil {
			return fmt.Errorf("ledger: verify %s: %w", q.table.name, err)
		}
		present[k] = true
	}
	return rows.Err()
}
