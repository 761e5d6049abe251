package main

import (
	"database/sql"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/mcp-guard/mcp-guard/internal/canon"
)

// Proves L8 through the real binary: while serve runs, a second process
// rewrites a recorded call's arguments and their digest in the calls table
// (what log -v then shows); verify, exit 0 before, exits 1 naming the row
// and the event that recorded it.
func TestVerify_NamesAnEditedCallRow(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := e.config(e.fake("db", ledgerTools), ledgerRules)
	h := e.connect(cfg, "")
	h.call(t, "db__echo", map[string]any{"path": "/tmp/notes"})
	h.call(t, "db__echo", map[string]any{"path": "/tmp/other"})
	h.call(t, "db__drop", map[string]any{"table": "t"})

	out, code := e.mcpGuard("verify", "--config", cfg)
	if code != 0 || !strings.Contains(out, "hash chain intact") || !regexp.MustCompile(`; (\d+) rows .* match it`).MatchString(out) {
		t.Fatalf("untouched ledger: verify exit %d\n%s", code, out)
	}

	db, err := sql.Open("sqlite", filepath.Join(e.state, "ledger.db")+"?_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var id int64
	if err := db.QueryRow(`SELECT min(id) FROM calls WHERE exposed = 'db__echo'`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	forged := []byte(`{"path":"/etc/shadow"}`)
	digest, err := canon.Digest(forged)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`UPDATE calls SET args = ?, args_digest = ? WHERE id = ?`, forged, digest, id); err != nil {
		t.Fatal(err)
	}
	db.Close()

	if out, _ := e.mcpGuard("log", "--config", cfg, "-v"); !strings.Contains(out, "/etc/shadow") {
		t.Fatalf("log -v does not show the forged arguments, so the attack did not take:\n%s", out)
	}
	out, code = e.mcpGuard("verify", "--config", cfg)
	want := regexp.MustCompile(`row calls id=` + itoa(id) + `: edited: its content is not what event \d+ \(call\.done\) recorded`)
	if code != 1 || !want.MatchString(out) || !strings.Contains(out, "args, args_digest differ from event") {
		t.Fatalf("verify after the edit: exit %d\n%s", code, out)
	}
	// serve keeps running on it (verify reports; it does not block calls).
	if res, err := h.call(t, "db__echo", map[string]any{}); err != nil || res.IsError {
		t.Fatalf("echo after the edit: %v", err)
	}
}

// Proves L8 on upgrade through the real binary: a ledger written by
// mcp-guard before rows were bound (ledger/testdata/v5.ledger) verifies, and
// log lists its four calls as before.
func TestVerify_UpgradedLedgerVerifiesAndLogs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cfg := e.config(e.fake("db", ledgerTools), ledgerRules)
	b, err := os.ReadFile("../../ledger/testdata/v5.ledger")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(e.state, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.state, "ledger.db"), b, 0o600); err != nil {
		t.Fatal(err)
	}
	out, code := e.mcpGuard("verify", "--config", cfg)
	if code != 0 || !strings.Contains(out, "ok: 16 events, hash chain intact; 10 rows") {
		t.Fatalf("verify of the upgraded ledger: exit %d\n%s", code, out)
	}
	out, code = e.mcpGuard("log", "--config", cfg, "-v")
	for _, want := range []string{"#1 ", "fs/read_file allow done", "#2 ", "fs/run deny refused", "#3 ", "fs/write_file ask failed", "#4 ", "/etc/passwd"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Fatalf("log (exit %d) lacks %q:\n%s", code, want, out)
		}
	}
}
