package ledger

import (
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/mcp-guard/mcp-guard/internal/canon"
)

// Rows that log, approvals, pin list and the gate's decisions read are bound
// into the event chain: every operation that inserts or changes such a row
// appends an event whose body holds, under "rows", the digest of the row's
// content as it is after the operation ("table:key" -> hex sha256 of
// rowDigest). Verify replays those digests in chain order and compares the
// result with the tables, so an edited, deleted or inserted row is named.

// boundTable is a table whose rows are bound into the chain.
type boundTable struct {
	name string
	key  string // its primary key column
	// skip is a column left out of the digest: sessions.heartbeat_at is a
	// liveness signal rewritten every few seconds without an event.
	skip string
}

// boundTables lists the bound tables in the order Verify checks them.
func boundTables() []boundTable {
	return []boundTable{
		{name: "sessions", key: "id", skip: "heartbeat_at"},
		{name: "calls", key: "id"},
		{name: "approvals", key: "id"},
		{name: "pins", key: "id"},
		{name: "scopes", key: "session_id"},
		{name: "labels", key: "id"},
		{name: "call_args", key: "call_id"},
	}
}

// boundQuery is how one bound table's rows are read for their digest.
type boundQuery struct {
	table  boundTable
	cols   []string // digested columns, sorted by name
	prefix string   // the column names, hashed before the row
	one    string   // SELECT quoted row FROM table WHERE key = ?
	all    string   // SELECT key, quoted row FROM table ORDER BY key
	// returning is " RETURNING quoted row": a statement that writes the row
	// returns what bindTouched would read back, in the same step.
	returning string
}

// boundQueries builds the queries of every bound table from the schema the
// migrations create.
func boundQueries(s *schemaInfo) (map[string]*boundQuery, error) {
	out := map[string]*boundQuery{}
	for _, t := range boundTables() {
		cols, ok := s.columns[t.name]
		if !ok || !cols[t.key] {
			return nil, fmt.Errorf("ledger: bound table %s (key %s) is not in the schema", t.name, t.key)
		}
		q := &boundQuery{table: t}
		for c := range cols {
			if c != t.skip {
				q.cols = append(q.cols, c)
			}
		}
		sort.Strings(q.cols)
		quoted := make([]string, len(q.cols))
		for i, c := range q.cols {
			quoted[i] = `quote(CAST("` + c + `" AS BLOB))`
		}
		expr := strings.Join(quoted, ` || ',' || `)
		q.prefix = t.name + "(" + strings.Join(q.cols, ",") + ")\n"
		q.one = fmt.Sprintf(`SELECT %s FROM "%s" WHERE "%s" = ?`, expr, t.name, t.key)
		q.returning = " RETURNING " + expr
		q.all = fmt.Sprintf(`SELECT "%s", %s FROM "%s" ORDER BY "%s"`, t.key, expr, t.name, t.key)
		out[t.name] = q
	}
	return out, nil
}

// rowRef names one bound row.
type rowRef struct {
	table string
	key   any // int64 or string
	// quoted is the row as the statement that last wrote it returned it
	// (boundQuery.returning), if known: then it is not read back.
	quoted string
	known  bool
	// digest is the row's digest, when the ledger built it from the
	// values it wrote (boundQuery.digestFrom).
	digest string
}

// keyString is the key as it appears in an event's "rows".
func keyString(key any) (string, error) {
	switch k := key.(type) {
	case int64:
		return strconv.FormatInt(k, 10), nil
	case string:
		return k, nil
	}
	return "", fmt.Errorf("ledger: a row key of type %T", key)
}

// rowDigest is the hex sha256 of a row's content: the table and the names
// of the digested columns, then each value's bytes as SQLite's
// quote(CAST(value AS BLOB)) writes them (NULL or X'hex'), comma separated,
// so a value cannot move between columns or hide behind a NUL. The tables
// are STRICT, so a column's type is fixed and its bytes (or NULL) are its
// whole content. SQLite builds the string: one column is read back, not
// one per table column.
func (q *boundQuery) rowDigest(quoted string) string {
	b := make([]byte, 0, len(q.prefix)+len(quoted))
	b = append(append(b, q.prefix...), quoted...)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// touch records that the operation inserted or changed a bound row: the next
// event it appends binds the row's content.
func (t *Tx) touch(table string, key any) {
	t.touchRow(rowRef{table: table, key: key})
}

// touchReturned is touch for a statement that returned the row as it wrote
// it (boundQuery.returning).
func (t *Tx) touchReturned(table string, key any, quoted string) {
	t.touchRow(rowRef{table: table, key: key, quoted: quoted, known: true})
}

// touchDigest is touch for a row whose digest the ledger built from the
// values it wrote (boundQuery.digestFrom).
func (t *Tx) touchDigest(table string, key any, digest string) {
	t.touchRow(rowRef{table: table, key: key, digest: digest})
}

// touchRow records ref, replacing an earlier touch of the same row: what the
// last statement wrote (or, unknown, a read back) is what the event binds.
func (t *Tx) touchRow(ref rowRef) {
	for i, r := range t.touched {
		if r.table == ref.table && r.key == ref.key {
			t.touched[i] = ref
			return
		}
	}
	t.touched = append(t.touched, ref)
}

// bindTouched adds to body, under "rows", the digest of every row touched
// since the last event, read back as it now is, and forgets them.
func (t *Tx) bindTouched(body any) (any, error) {
	if len(t.touched) == 0 {
		return body, nil
	}
	var hasRows bool
	m, isMap := body.(map[string]any)
	o, isObject := body.(canon.Object)
	switch {
	case isMap:
		_, hasRows = m["rows"]
	case isObject:
		hasRows = slices.ContainsFunc(o, func(m canon.Member) bool { return m.Name == "rows" })
	default:
		return nil, fmt.Errorf("ledger: an event binding rows needs a map or canon.Object body, not %T", body)
	}
	if hasRows {
		return nil, fmt.Errorf("ledger: an event body may not set \"rows\" itself")
	}
	rows := make(canon.Object, 0, len(t.touched))
	for _, r := range t.touched {
		q := t.l.bound[r.table]
		if q == nil {
			return nil, fmt.Errorf("ledger: %s is not a bound table", r.table)
		}
		k, err := keyString(r.key)
		if err != nil {
			return nil, err
		}
		if r.digest != "" {
			rows = append(rows, canon.Member{Name: r.table + ":" + k, Value: r.digest})
			continue
		}
		quoted := r.quoted
		if !r.known {
			if err := t.queryRow(q.one, r.key).Scan(&quoted); err != nil {
				return nil, fmt.Errorf("ledger: bind %s %s: %w", r.table, k, err)
			}
		}
		rows = append(rows, canon.Member{Name: r.table + ":" + k, Value: q.rowDigest(quoted)})
	}
	t.touched = t.touched[:0]
	if isMap {
		out := maps.Clone(m)
		out["rows"] = rows
		return out, nil
	}
	// rows goes where its name sorts, so that Marshal need not sort; the
	// caller's members are left as they are.
	i := 0
	for i < len(o) && o[i].Name < "rows" {
		i++
	}
	out := make(canon.Object, 0, len(o)+1)
	out = append(append(append(out, o[:i]...), canon.Member{Name: "rows", Value: rows}), o[i:]...)
	return out, nil
}

// bindExisting binds every row of the bound tables, as it is, with
// "ledger.bound" events of at most bindChunk rows: a ledger written before
// rows were bound (schema < 6) is upgraded by it, in the migration's
// transaction.
func bindExisting(t *Tx, fromVersion int) (int, error) {
	n := 0
	flush := func() error {
		if len(t.touched) == 0 {
			return nil
		}
		_, err := t.AppendEvent("ledger.bound", "ledger:migration", map[string]any{
			"reason": "rows written before schema 6, bound as found at the upgrade", "from_schema": int64(fromVersion)})
		return err
	}
	for _, bt := range boundTables() {
		keys, err := allKeys(t, bt)
		if err != nil {
			return n, err
		}
		for _, k := range keys {
			t.touched = append(t.touched, rowRef{table: bt.name, key: k})
			n++
			if len(t.touched) >= bindChunk {
				if err := flush(); err != nil {
					return n, err
				}
			}
		}
	}
	return n, flush()
}

// rebindFrom rebinds, with "ledger.bound" events, the rows of every table a
// migration after schema from (up to to) changed the columns of: their
// digests changed with the columns.
func rebindFrom(t *Tx, from, to int) error {
	for v := from + 1; v <= to; v++ {
		for _, table := range rebinds()[v] {
			var bt boundTable
			for _, b := range boundTables() {
				if b.name == table {
					bt = b
				}
			}
			keys, err := allKeys(t, bt)
			if err != nil {
				return err
			}
			for i := 0; i < len(keys); i += bindChunk {
				for _, k := range keys[i:min(i+bindChunk, len(keys))] {
					t.touched = append(t.touched, rowRef{table: table, key: k})
				}
				if _, err := t.AppendEvent("ledger.bound", "ledger:migration", map[string]any{
					"reason":      fmt.Sprintf("schema %d changed the columns of %s: its rows bound as found at the upgrade", v, table),
					"from_schema": int64(from)}); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// bindChunk is how many rows one ledger.bound event binds.
const bindChunk = 500

func allKeys(t *Tx, bt boundTable) ([]any, error) {
	rows, err := t.q.QueryContext(t.ctx, fmt.Sprintf(`SELECT "%s" FROM "%s" ORDER BY "%s"`, bt.key, bt.name, bt.key))
	if err != nil {
		return nil, fmt.Errorf("ledger: bind %s: %w", bt.name, err)
	}
	defer rows.Close()
	var keys []any
	for rows.Next() {
		var k any
		if err := rows.Scan(&k); err != nil {
			return nil, fmt.Errorf("ledger: bind %s: %w", bt.name, err)
		}
		keys = append(keys, k)
	}
	return keys, rows.Err()
}

// touchInserted touches the row an INSERT made (its rowid key).
func touchInserted(t *Tx, table string, res sql.Result) error {
	id, err := res.LastInsertId()
	if err != nil {
		return fmt.Errorf("ledger: %s: %w", table, err)
	}
	t.touch(table, id)
	return nil
}
