package hostconfig

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func mode(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Save keeps the original as an owner-only backup and the file's mode;
// Restore puts the original back byte for byte and removes what Save left.
func TestSaveRestore_RoundTrip(t *testing.T) {
	defer syscall.Umask(syscall.Umask(0o022))
	orig := "{\r\n\t\"mcpServers\" : {\"fs\": {\"command\": \"x\", \"env\": {\"K\": \"v\"}}} ,\"other\":true}  \n\n"
	p := writeTemp(t, orig)
	if err := os.Chmod(p, 0o640); err != nil {
		t.Fatal(err)
	}
	c, err := LoadDesktop(p)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ReadSaved(p)
	if err != nil || s.Backup != nil || s.Wrote != nil || s.Unchanged(c.Raw) {
		t.Fatalf("nothing saved yet: %+v, %v", s, err)
	}
	next := c.Wrap(DesktopOptions{Bin: "/b", Config: "/c", Guard: map[string]bool{"fs": true}}).Bytes
	if err := Save(p, c.Raw, next, s); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, p); got != string(next) {
		t.Fatalf("file after Save:\n%s", got)
	}
	if m := mode(t, p); m != 0o640 {
		t.Errorf("file mode %o after Save, want 0640 as before", m)
	}
	for _, q := range []string{BackupPath(p), RecordPath(p)} {
		if m := mode(t, q); m != 0o600 {
			t.Errorf("%s mode %o, want 0600", q, m)
		}
	}
	s, err = ReadSaved(p)
	if err != nil || string(s.Backup) != orig || string(s.Wrote) != string(next) || !s.Unchanged(next) || !s.Unchanged([]byte(orig)) || s.Unchanged([]byte("{}")) {
		t.Fatalf("saved after wrap: %+v, %v", s, err)
	}
	leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(p), ".*tmp-*"))
	if len(leftovers) > 0 {
		t.Errorf("temporary files left: %v", leftovers)
	}

	if err := Restore(p, s); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, p); got != orig {
		t.Fatalf("restored %q, want %q", got, orig)
	}
	if m := mode(t, p); m != 0o640 {
		t.Errorf("file mode %o after Restore, want 0640", m)
	}
	for _, q := range []string{BackupPath(p), RecordPath(p)} {
		if _, err := os.Stat(q); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s left after Restore: %v", q, err)
		}
	}
	if err := Restore(p, &Saved{}); !errors.Is(err, ErrNoBackup) {
		t.Errorf("Restore without a backup: %v", err)
	}
}

// A backup that exists is never overwritten, even when the caller's view of
// what is saved is stale; the file is then left as it was too.
func TestSave_NeverOverwritesABackup(t *testing.T) {
	p := writeTemp(t, `{"mcpServers": {}}`)
	if err := os.WriteFile(BackupPath(p), []byte("the real original"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := Save(p, []byte(`{"mcpServers": {}}`), []byte("{}"), &Saved{})
	if err == nil || !strings.Contains(err.Error(), "exists already, and a backup is never overwritten") {
		t.Fatalf("Save over an existing backup: %v", err)
	}
	if got := readFile(t, BackupPath(p)); got != "the real original" {
		t.Errorf("backup overwritten: %q", got)
	}
	if got := readFile(t, p); got != `{"mcpServers": {}}` {
		t.Errorf("file changed: %q", got)
	}
}

// Restore works when the file is gone, and a half-finished wrap (backup
// saved, nothing else) still counts as unchanged.
func TestRestore_FileGoneAndHalfWrap(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, DesktopFileName)
	orig := []byte(`{"a": 1}`)
	if err := os.WriteFile(BackupPath(p), orig, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := ReadSaved(p)
	if err != nil || !s.Unchanged(orig) {
		t.Fatalf("%+v %v", s, err)
	}
	if err := Restore(p, s); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, p); !bytes.Equal([]byte(got), orig) {
		t.Errorf("restored %q", got)
	}
	if m := mode(t, p); m != 0o600 {
		t.Errorf("mode %o", m)
	}
}
