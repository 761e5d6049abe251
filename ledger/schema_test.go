package ledger

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"modernc.org/sqlite"
)

// Proves L4 (deny path): an object the migrations did not create, planted by
// a connection without defensive mode, is refused by the next Open, naming
// it.
func TestRefusesPlantedSchemaObjects(t *testing.T) {
	cases := []struct {
		name, ddl, want string
	}{
		{"trigger", `CREATE TRIGGER t_evil AFTER INSERT ON events BEGIN SELECT 1; END`, `foreign trigger "t_evil" on "events"`},
		{"view", `CREATE VIEW v_evil AS SELECT * FROM calls`, `foreign view "v_evil"`},
		{"table", `CREATE TABLE extra (x)`, `unexpected table "extra"`},
		{"index", `CREATE INDEX calls_extra ON calls(reason)`, `unexpected index "calls_extra" on "calls"`},
		{"changed DDL", `DROP INDEX calls_tool_id; CREATE INDEX calls_tool_id ON calls(tool)`, `index "calls_tool_id" differs`},
		{"dropped", `DROP INDEX calls_state_id`, `missing index "calls_state_id"`},
		{"analyze statistics", `ANALYZE`, `unexpected table "sqlite_stat1"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := newClosedLedger(t)
			db := plainDB(t, path)
			mustExec(t, db, c.ddl)
			db.Close()
			wantRefusal(t, path, c.want, "fix with:")
		})
	}
}

// Proves that a clean file reopens (the allow path of the schema check), and
// that a file from a newer schema version is refused.
func TestSchemaVersion(t *testing.T) {
	path := newClosedLedger(t)
	openTest(t, path, Options{}).Close()

	db := plainDB(t, path)
	mustExec(t, db, fmt.Sprintf("PRAGMA user_version = %d", len(migrations())+1))
	db.Close()
	wantRefusal(t, path, fmt.Sprintf("has schema version %d", len(migrations())+1), "newer mcp-guard")
}

// Proves L4 while running: a trigger planted after Open is caught before the
// next write can fire it (schema_version moved).
func TestRefusesTriggerPlantedWhileOpen(t *testing.T) {
	path := newClosedLedger(t)
	l := openTest(t, path, Options{})
	// A write first: the writer now knows the file as its commit left it.
	if err := l.Write(context.Background(), func(tx *Tx) error {
		_, err := tx.AppendEvent("test", "x", map[string]any{})
		return err
	}); err != nil {
		t.Fatal(err)
	}
	db := plainDB(t, path)
	mustExec(t, db, `CREATE TABLE loot (x); CREATE TRIGGER t_steal AFTER INSERT ON events BEGIN INSERT INTO loot VALUES (new.body); END`)
	err := l.Write(context.Background(), func(tx *Tx) error {
		_, err := tx.AppendEvent("test", "x", map[string]any{})
		return err
	})
	if err == nil || !strings.Contains(err.Error(), `"t_steal"`) {
		t.Fatalf("write after planting: %v, want refusal naming t_steal", err)
	}
	if n := countRows(t, db, "SELECT count(*) FROM loot"); n != 0 {
		t.Fatalf("planted trigger ran %d times", n)
	}
}

// Proves a schema change made through the writer's own connection (which
// leaves data_version where it was) is checked at the next batch too.
func TestRefusesTriggerPlantedThroughTheWriter(t *testing.T) {
	l := openTest(t, "", Options{})
	ctx := context.Background()
	if err := l.Write(ctx, func(tx *Tx) error {
		_, err := tx.Exec(`CREATE TRIGGER t_own AFTER INSERT ON events BEGIN SELECT 1; END`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	err := l.Write(ctx, func(tx *Tx) error {
		_, err := tx.AppendEvent("test", "x", map[string]any{})
		return err
	})
	if err == nil || !strings.Contains(err.Error(), `"t_own"`) {
		t.Fatalf("write after a trigger made through the writer: %v, want refusal naming t_own", err)
	}
}

type pragmaState struct {
	journal                                            string
	sync, fk, trusted, busy, queryOnly, writableSchema int64
}

func readPragmas(t *testing.T, c *sql.Conn) pragmaState {
	t.Helper()
	ctx := context.Background()
	var p pragmaState
	for _, q := range []struct {
		sql string
		dst any
	}{
		{"PRAGMA journal_mode", &p.journal},
		{"PRAGMA synchronous", &p.sync},
		{"PRAGMA foreign_keys", &p.fk},
		{"PRAGMA trusted_schema", &p.trusted},
		{"PRAGMA busy_timeout", &p.busy},
		{"PRAGMA query_only", &p.queryOnly},
	} {
		if err := c.QueryRowContext(ctx, q.sql).Scan(q.dst); err != nil {
			t.Fatalf("%s: %v", q.sql, err)
		}
	}
	if _, err := c.ExecContext(ctx, "PRAGMA writable_schema=ON"); err != nil {
		t.Fatal(err)
	}
	if err := c.QueryRowContext(ctx, "PRAGMA writable_schema").Scan(&p.writableSchema); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ExecContext(ctx, "PRAGMA writable_schema=OFF"); err != nil {
		t.Fatal(err)
	}
	return p
}

// Proves L4 (every connection): with 4 reader connections held at once (so
// the pool really opened 4) and the writer's, each reads back WAL,
// synchronous=FULL, foreign keys on, trusted_schema off, the busy timeout,
// and defensive mode (writable_schema cannot be turned on).
func TestPragmasOnEveryPooledConnection(t *testing.T) {
	ctx := context.Background()
	l := openTest(t, "", Options{BusyTimeout: 1234 * 1e6})
	var conns []*sql.Conn
	for range 4 {
		c, err := l.rdb.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns = append(conns, c)
	}
	if n := l.rdb.Stats().OpenConnections; n != 4 {
		t.Fatalf("reader pool has %d open connections, want 4", n)
	}
	w := l.wconn // the writer's one connection; the writer is idle
	for i, c := range append(conns, w) {
		got := readPragmas(t, c)
		want := pragmaState{journal: "wal", sync: 2, fk: 1, trusted: 0, busy: 1234, queryOnly: 1, writableSchema: 0}
		if c == w {
			want.queryOnly = 0
		}
		if got != want {
			t.Errorf("conn %d: %+v, want %+v", i, got, want)
		}
	}
	if runtime.GOOS == "linux" && !sqlite.FdatasyncEnabled() {
		t.Error("commits sync with fsync, not fdatasync")
	}
	var pageSize int
	if err := w.QueryRowContext(ctx, "PRAGMA page_size").Scan(&pageSize); err != nil || pageSize != 2048 {
		t.Errorf("a new ledger's page size is %d (%v), want 2048", pageSize, err)
	}
	// Defensive mode, by behaviour: the writer cannot edit sqlite_schema even
	// with writable_schema requested.
	if _, err := w.ExecContext(ctx, "PRAGMA writable_schema=ON; UPDATE sqlite_schema SET sql = sql WHERE name = 'events'"); err == nil {
		t.Error("writer could write sqlite_schema: defensive mode is off")
	}
	w.ExecContext(ctx, "PRAGMA writable_schema=OFF")
}

// Proves the connection check refuses a connection the DSN did not harden
// (the deny path of the per-connection read-back).
func TestConnectionCheckRefusesUnhardened(t *testing.T) {
	path := newClosedLedger(t)
	good := dsn(path, 5000, false)
	cases := []struct {
		name, dsn, want string
	}{
		{"no defensive", strings.Replace(good, "_defensive=1&", "", 1), "defensive mode is off"},
		{"synchronous normal", strings.Replace(good, "_synchronous=FULL", "_synchronous=NORMAL", 1), "synchronous is 1, want 2"},
		{"trusted schema", strings.Replace(good, "&_pragma=trusted_schema(0)", "", 1), "trusted_schema is 1, want 0"},
		{"foreign keys", strings.Replace(good, "_foreign_keys=on", "_foreign_keys=off", 1), "foreign_keys is 0, want 1"},
		{"busy timeout", strings.Replace(good, "_busy_timeout=5000", "_busy_timeout=10", 1), "busy_timeout is 10, want 5000"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			db, err := sql.Open("sqlite", c.dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			conn, err := db.Conn(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			err = conn.Raw(func(dc any) error {
				return checkConn(context.Background(), dc.(driver.Conn), 5000, false)
			})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("checkConn: %v, want %q", err, c.want)
			}
		})
	}
	// The hardened DSN passes.
	db, err := openDB(path, 5000, false)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Ping(); err != nil {
		t.Fatalf("hardened connection refused: %v", err)
	}
}
