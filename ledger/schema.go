package ledger

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"strings"
)

// genesisHash is the prev_hash of the first event.
const genesisHash = "0000000000000000000000000000000000000000000000000000000000000000"

// migration1 creates sessions, calls, the event chain and its head.
const migration1 = `
CREATE TABLE sessions (
	id TEXT PRIMARY KEY,
	kind TEXT NOT NULL,
	host TEXT NOT NULL,
	pid INTEGER NOT NULL,
	started_at INTEGER NOT NULL,
	heartbeat_at INTEGER NOT NULL,
	ended_at INTEGER
) STRICT;
CREATE TABLE calls (
	id INTEGER PRIMARY KEY,
	session_id TEXT NOT NULL REFERENCES sessions(id),
	request_id TEXT,
	server TEXT NOT NULL,
	tool TEXT NOT NULL,
	exposed TEXT,
	pin_digest TEXT,
	args BLOB,
	args_invalid BLOB,
	args_digest TEXT,
	decision TEXT NOT NULL,
	rule INTEGER,
	class TEXT,
	reason TEXT,
	state TEXT NOT NULL,
	started_at INTEGER NOT NULL,
	ended_at INTEGER,
	duration_ms INTEGER,
	result_digest TEXT,
	result_bytes INTEGER,
	is_error INTEGER,
	error TEXT,
	late_at INTEGER,
	late_state TEXT,
	late_duration_ms INTEGER,
	late_result_digest TEXT,
	late_result_bytes INTEGER,
	late_is_error INTEGER,
	late_error TEXT
) STRICT;
CREATE INDEX calls_server_id ON calls(server, id);
CREATE INDEX calls_server_tool_id ON calls(server, tool, id);
CREATE INDEX calls_tool_id ON calls(tool, id);
CREATE INDEX calls_state_id ON calls(state, id);
CREATE INDEX calls_session_state ON calls(session_id, state);
CREATE TABLE events (
	seq INTEGER PRIMARY KEY,
	at INTEGER NOT NULL,
	kind TEXT NOT NULL,
	subject TEXT NOT NULL,
	body BLOB NOT NULL,
	prev_hash TEXT NOT NULL,
	hash TEXT NOT NULL
) STRICT;
CREATE INDEX events_subject_seq ON events(subject, seq);
CREATE TABLE chain_head (
	id INTEGER PRIMARY KEY CHECK (id = 1),
	seq INTEGER NOT NULL,
	hash TEXT NOT NULL
) STRICT;
INSERT INTO chain_head (id, seq, hash) VALUES (1, 0, '` + genesisHash + `');
`

// migration2 adds pins: the accepted definition of each upstream tool (tool
// "" holds the server's instructions), and the live one awaiting a decision.
const migration2 = `
CREATE TABLE pins (
	id INTEGER PRIMARY KEY,
	server TEXT NOT NULL,
	tool TEXT NOT NULL,
	state TEXT NOT NULL,
	digest TEXT,
	raw BLOB,
	pending_digest TEXT,
	pending_raw BLOB,
	updated_at INTEGER NOT NULL,
	UNIQUE (server, tool)
) STRICT;
`

// migration3 adds approvals: a call an ask rule holds for the operator,
// bound to exactly what will run and what the operator is shown.
const migration3 = `
CREATE TABLE approvals (
	id INTEGER PRIMARY KEY,
	call_id INTEGER NOT NULL UNIQUE REFERENCES calls(id),
	session_id TEXT NOT NULL,
	server TEXT NOT NULL,
	tool TEXT NOT NULL,
	pin_digest TEXT NOT NULL,
	class TEXT NOT NULL,
	rule INTEGER NOT NULL,
	args BLOB,
	args_digest TEXT NOT NULL,
	presentation TEXT NOT NULL,
	presentation_digest TEXT NOT NULL,
	binding TEXT NOT NULL,
	state TEXT NOT NULL,
	reason TEXT,
	created_at INTEGER NOT NULL,
	expires_at INTEGER NOT NULL,
	decided_at INTEGER,
	grant_expires_at INTEGER
) STRICT;
CREATE INDEX approvals_state_id ON approvals(state, id);
CREATE INDEX approvals_grant ON approvals(server, tool, args_digest, state);
`

// migration4 records what a call was: a tools/call ("tool", every call
// recorded before it), a prompts/get ("prompt": tool holds the prompt's
// name) or a resources/read ("resource": tool holds the URI read).
const migration4 = `
ALTER TABLE calls ADD COLUMN kind TEXT NOT NULL DEFAULT 'tool';
CREATE INDEX calls_kind_id ON calls(kind, id);
`

// migration5 keeps the indexes a call writes to the few that paging needs,
// so a call's commit writes fewer pages: the state index holds only calls
// not "done" (by far the most common state, listed by scanning ids), the
// kind index only calls that are not tool calls, and the events' subject
// index (used to find the last pin or reset event) no call events. A query
// can use such a partial index only if it repeats the index's WHERE term.
// The session index served no query (recovery goes by state; sessions are
// never deleted, so the foreign key needs no child index): dropped.
const migration5 = `
DROP INDEX calls_state_id;
CREATE INDEX calls_state_id ON calls(state, id) WHERE state <> 'done';
DROP INDEX calls_kind_id;
CREATE INDEX calls_kind_id ON calls(kind, id) WHERE kind <> 'tool';
DROP INDEX calls_session_state;
DROP INDEX events_subject_seq;
CREATE INDEX events_subject_seq ON events(subject, seq) WHERE subject < 'call:' OR subject >= 'call;';
`

// migration6 changes no table: from schema 6 on, every row of sessions,
// calls, approvals and pins is bound into the event chain (bind.go). Opening
// an older file binds the rows it holds with "ledger.bound" events, in the
// migration's transaction (bindExisting).
const migration6 = `SELECT 1;`

// migration7 adds information-flow labels. scopes says which label scope
// each serving session joined (every serve started for one host shares
// one); labels holds each label a scope gained, with the call that brought
// it, until it is declassified or its scope ends (ended_at). The partial
// unique index keeps one live row per scope and label; scope_labels is the
// live ones. approvals.labels is the label set an ask for a flow is bound
// to (NULL: not a flow's ask). Adding the column changes the digest of
// every approvals row: the migration rebinds them (rebindFrom).
const migration7 = `
ALTER TABLE approvals ADD COLUMN labels TEXT;
CREATE TABLE scopes (
	session_id TEXT PRIMARY KEY REFERENCES sessions(id),
	scope TEXT NOT NULL,
	joined_at INTEGER NOT NULL
) STRICT;
CREATE INDEX scopes_scope ON scopes(scope);
CREATE TABLE labels (
	id INTEGER PRIMARY KEY,
	scope TEXT NOT NULL,
	label TEXT NOT NULL,
	call_id INTEGER NOT NULL REFERENCES calls(id),
	session_id TEXT NOT NULL,
	gained_at INTEGER NOT NULL,
	ended_at INTEGER,
	ended_by TEXT,
	end_reason TEXT
) STRICT;
CREATE UNIQUE INDEX labels_live ON labels(scope, label) WHERE ended_at IS NULL;
CREATE VIEW scope_labels AS SELECT scope, label, call_id, session_id, gained_at FROM labels WHERE ended_at IS NULL;
`

// migration8 keeps large arguments out of the calls row. SQLite rewrites a
// whole row on UPDATE, overflow pages and all, so a call whose arguments
// are megabytes had them written again when its outcome was recorded.
// Arguments longer than argsApart bytes are written once, here, keyed by
// their call: the row's args column is NULL, and the call's event holds
// their digest and binds this row (it is bound like calls) instead of a
// copy. Readers take coalesce(calls.args, call_args.args).
const migration8 = `
CREATE TABLE call_args (
	call_id INTEGER PRIMARY KEY REFERENCES calls(id),
	args BLOB NOT NULL
) STRICT;
`

// rebinds names, for each migration that changed a bound table's
// columns, the tables whose rows it rebinds (schema version -> tables).
func rebinds() map[int][]string {
	return map[int][]string{7: {"approvals"}}
}

// boundSince is the first schema version whose rows are all bound. A later
// migration that adds, drops or changes a column of a bound table changes
// every row's digest: it must rebind the rows it migrates (as bindExisting
// does), or Verify reads every older row as edited.
const boundSince = 6

// migrations is the ordered schema history; PRAGMA user_version is the number
// applied. Append a migration here to change the schema: never edit one that
// has shipped.
func migrations() []string {
	return []string{
		migration1,
		migration2,
		migration3,
		migration4,
		migration5,
		migration6,
		migration7,
		migration8,
	}
}

// schemaObject is one row of sqlite_schema.
type schemaObject struct {
	typ, name, tblName, sql string
}

// schemaInfo is what the migrations create: every schema object, and the
// columns of every table (for the CAS allowlist).
type schemaInfo struct {
	objects map[string]schemaObject
	columns map[string]map[string]bool
}

// expectedSchema applies the first n migrations to a fresh in-memory database
// and reads back what they created.
func expectedSchema(ctx context.Context, n int) (*schemaInfo, error) {
	db, err := sql.Open("sqlite", ":memory:?_defensive=1&_dqs=0&_foreign_keys=on")
	if err != nil {
		return nil, fmt.Errorf("ledger: expected schema: %w", err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	for i, m := range migrations()[:n] {
		if _, err := db.ExecContext(ctx, m); err != nil {
			return nil, fmt.Errorf("ledger: expected schema: migration %d: %w", i+1, err)
		}
	}
	objs, err := readSchema(ctx, db)
	if err != nil {
		return nil, fmt.Errorf("ledger: expected schema: %w", err)
	}
	info := &schemaInfo{objects: map[string]schemaObject{}, columns: map[string]map[string]bool{}}
	for _, o := range objs {
		info.objects[o.name] = o
		if o.typ != "table" {
			continue
		}
		cols := map[string]bool{}
		rows, err := db.QueryContext(ctx, "SELECT name FROM pragma_table_info(?)", o.name)
		if err != nil {
			return nil, fmt.Errorf("ledger: expected schema: columns of %s: %w", o.name, err)
		}
		for rows.Next() {
			var c string
			if err := rows.Scan(&c); err != nil {
				rows.Close()
				return nil, fmt.Errorf("ledger: expected schema: columns of %s: %w", o.name, err)
			}
			cols[c] = true
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("ledger: expected schema: columns of %s: %w", o.name, err)
		}
		info.columns[o.name] = cols
	}
	return info, nil
}

type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// readSchema returns main.sqlite_schema minus the implicit indexes SQLite
// makes for PRIMARY KEY/UNIQUE (sqlite_autoindex_*, NULL sql).
func readSchema(ctx context.Context, q querier) ([]schemaObject, error) {
	rows, err := q.QueryContext(ctx, `SELECT type, name, tbl_name, sql FROM main.sqlite_schema ORDER BY name`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []schemaObject
	for rows.Next() {
		var o schemaObject
		var s sql.NullString
		if err := rows.Scan(&o.typ, &o.name, &o.tblName, &s); err != nil {
			return nil, err
		}
		if o.typ == "index" && !s.Valid && strings.HasPrefix(o.name, "sqlite_autoindex_") {
			continue
		}
		o.sql = s.String
		if !s.Valid {
			o.sql = "<NULL>"
		}
		out = append(out, o)
	}
	return out, rows.Err()
}

// checkSchema compares the whole schema of the file with what the migrations
// create and refuses any difference, naming the object.
func checkSchema(ctx context.Context, q querier, path string, want *schemaInfo) error {
	got, err := readSchema(ctx, q)
	if err != nil {
		return fmt.Errorf("ledger: %s: read schema: %w", path, err)
	}
	var problems []string
	seen := map[string]bool{}
	for _, o := range got {
		seen[o.name] = true
		w, ok := want.objects[o.name]
		switch {
		case !ok && (o.typ == "trigger" || o.typ == "view"):
			problems = append(problems, fmt.Sprintf("foreign %s %q on %q", o.typ, o.name, o.tblName))
		case !ok:
			problems = append(problems, fmt.Sprintf("unexpected %s %q on %q", o.typ, o.name, o.tblName))
		case w.typ != o.typ || w.tblName != o.tblName || w.sql != o.sql:
			problems = append(problems, fmt.Sprintf("%s %q differs from the DDL this mcp-guard creates", o.typ, o.name))
		}
	}
	var missing []string
	for name, w := range want.objects {
		if !seen[name] {
			missing = append(missing, fmt.Sprintf("missing %s %q", w.typ, name))
		}
	}
	sort.Strings(missing)
	problems = append(problems, missing...)
	if len(problems) > 0 {
		return refuse(fmt.Sprintf("ledger: %s: refusing database whose schema was changed outside mcp-guard: %s; fix with: inspect it (sqlite3 %s .schema), drop what mcp-guard did not create, or move the file aside and start a new ledger",
			path, strings.Join(problems, "; "), path))
	}
	return nil
}

// migrate brings the file to the current schema in one IMMEDIATE transaction
// (so concurrent openers serialize) and checks the result. A file written
// before rows were bound into the chain has its rows bound in the same
// transaction: if anything fails, the file is left as it was.
func (l *Ledger) migrate(ctx context.Context) (schemaVersion int64, err error) {
	db, path, want := l.wdb, l.path, l.schema
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("ledger: %s: begin migration: %w", path, err)
	}
	defer tx.Rollback()
	var v int
	if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return 0, fmt.Errorf("ledger: %s: read user_version: %w", path, err)
	}
	ms := migrations()
	if v > len(ms) || v < 0 {
		return 0, refuse(fmt.Sprintf("ledger: %s has schema version %d, this mcp-guard knows versions up to %d; fix with: use a newer mcp-guard", path, v, len(ms)))
	}
	if v < len(ms) {
		// Check what is there before running anything on top of it.
		if err := checkSchemaPrefix(ctx, tx, path, v); err != nil {
			return 0, err
		}
	}
	for i := v; i < len(ms); i++ {
		if _, err := tx.ExecContext(ctx, ms[i]); err != nil {
			return 0, fmt.Errorf("ledger: %s: migration %d: %w", path, i+1, err)
		}
	}
	if v > 0 && v < boundSince {
		t := &Tx{l: l, q: tx, ctx: ctx}
		if _, err := bindExisting(t, v); err != nil {
			return 0, fmt.Errorf("ledger: %s: bind the rows of schema %d: %w", path, v, err)
		}
		if err := t.saveHead(); err != nil {
			return 0, fmt.Errorf("ledger: %s: bind the rows of schema %d: %w", path, v, err)
		}
		t.done = true
	}
	if v >= boundSince {
		t := &Tx{l: l, q: tx, ctx: ctx}
		if err := rebindFrom(t, v, len(ms)); err != nil {
			return 0, fmt.Errorf("ledger: %s: rebind rows after migration: %w", path, err)
		}
		if err := t.saveHead(); err != nil {
			return 0, fmt.Errorf("ledger: %s: rebind rows after migration: %w", path, err)
		}
		t.done = true
	}
	if v != len(ms) {
		if _, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", len(ms))); err != nil {
			return 0, fmt.Errorf("ledger: %s: set user_version: %w", path, err)
		}
	}
	if err := checkSchema(ctx, tx, path, want); err != nil {
		return 0, err
	}
	if err := tx.QueryRowContext(ctx, "PRAGMA schema_version").Scan(&schemaVersion); err != nil {
		return 0, fmt.Errorf("ledger: %s: read schema_version: %w", path, err)
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("ledger: %s: commit migration: %w", path, err)
	}
	return schemaVersion, nil
}

// checkSchemaPrefix checks a file at version v < current against what the
// first v migrations create, so nothing planted runs during a migration.
func checkSchemaPrefix(ctx context.Context, q querier, path string, v int) error {
	want, err := expectedSchema(ctx, v)
	if err != nil {
		return err
	}
	return checkSchema(ctx, q, path, want)
}
