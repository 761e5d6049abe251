package ledger

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Proves L4 (owner-only files): the db, -wal and -shm are 0600 and a created
// directory 0700 whatever the umask.
func TestFilesOwnerOnlyUnderAnyUmask(t *testing.T) {
	for _, mask := range []int{0o000, 0o022, 0o077} {
		t.Run(fmt.Sprintf("umask=%04o", mask), func(t *testing.T) {
			old := syscall.Umask(mask)
			defer syscall.Umask(old)
			dir := filepath.Join(t.TempDir(), "state", "mcp-guard")
			path := filepath.Join(dir, "ledger.db")
			l := openTest(t, path, Options{})
			appendEvents(t, l, 1)
			for _, p := range []string{path, path + "-wal", path + "-shm"} {
				fi, err := os.Lstat(p)
				if err != nil {
					t.Fatalf("%s: %v", p, err)
				}
				if got := fi.Mode().Perm(); got != 0o600 {
					t.Errorf("umask %04o: %s is %04o, want 0600", mask, filepath.Base(p), got)
				}
			}
			fi, err := os.Lstat(dir)
			if err != nil {
				t.Fatal(err)
			}
			if got := fi.Mode().Perm(); got != 0o700 {
				t.Errorf("umask %04o: directory is %04o, want 0700", mask, got)
			}
		})
	}
}

// newClosedLedger makes a valid ledger file and closes it.
func newClosedLedger(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "ledger.db")
	l, err := Open(context.Background(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	appendEvents(t, l, 1)
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func wantRefusal(t *testing.T, path string, wants ...string) {
	t.Helper()
	l, err := Open(context.Background(), path, Options{})
	if err == nil {
		l.Close()
		t.Fatalf("Open(%s) succeeded, want refusal mentioning %q", path, wants)
	}
	if !errors.Is(err, ErrUnsafe) {
		t.Errorf("error does not match ErrUnsafe: %v", err)
	}
	for _, w := range wants {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not mention %q", err, w)
		}
	}
}

// Proves L4 (deny path): a db file others can write is refused, and the
// message says how to fix it.
func TestRefusesGroupWritableDB(t *testing.T) {
	path := newClosedLedger(t)
	if err := os.Chmod(path, 0o620); err != nil {
		t.Fatal(err)
	}
	wantRefusal(t, path, path+" is mode 0620", "writable by group", "fix with: chmod 600 "+path)
	// After the fix it opens again (allow path).
	if err := os.Chmod(path, 0o600); err != nil {
		t.Fatal(err)
	}
	openTest(t, path, Options{})
}

// Proves L4: a readable-by-others sidecar (-wal) is refused too.
func TestRefusesReadableWAL(t *testing.T) {
	path := newClosedLedger(t)
	if err := os.WriteFile(path+"-wal", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path+"-wal", 0o644); err != nil {
		t.Fatal(err)
	}
	wantRefusal(t, path+"", path+"-wal is mode 0644", "readable by group and others", "chmod 600 "+path+"-wal")
}

// Proves L4: a directory others can write (no sticky bit) is refused; a
// sticky one (like /tmp) is accepted.
func TestRefusesOtherWritableDirectory(t *testing.T) {
	path := newClosedLedger(t)
	dir := filepath.Dir(path)
	if err := os.Chmod(dir, 0o703); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o700) })
	wantRefusal(t, path, "directory "+dir+" is mode 0703", "writable", "fix with: chmod 700 "+dir)

	if err := os.Chmod(dir, 0o777|fs.ModeSticky); err != nil {
		t.Fatal(err)
	}
	openTest(t, path, Options{})
}

// Proves L4: a symlinked db is refused (never followed).
func TestRefusesSymlinkedDB(t *testing.T) {
	real := newClosedLedger(t)
	link := filepath.Join(t.TempDir(), "ledger.db")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	wantRefusal(t, link, link+" is a symbolic link", "fix with:")
}

// Proves L4: a symlinked directory is refused.
func TestRefusesSymlinkedDirectory(t *testing.T) {
	real := newClosedLedger(t)
	linkDir := filepath.Join(t.TempDir(), "state")
	if err := os.Symlink(filepath.Dir(real), linkDir); err != nil {
		t.Fatal(err)
	}
	wantRefusal(t, filepath.Join(linkDir, "ledger.db"), "directory "+linkDir+" is a symbolic link", "fix with:")
}

// Proves L4: a hard-linked db (another name reaching the same data) is
// refused.
func TestRefusesHardLinkedDB(t *testing.T) {
	path := newClosedLedger(t)
	other := filepath.Join(filepath.Dir(path), "copy.db")
	if err := os.Link(path, other); err != nil {
		t.Fatal(err)
	}
	wantRefusal(t, path, path+" has 2 hard links", "fix with:")
	if err := os.Remove(other); err != nil {
		t.Fatal(err)
	}
	openTest(t, path, Options{})
}

// Proves L4: a db that is not a regular file is refused.
func TestRefusesNonRegularDB(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.db")
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	wantRefusal(t, path, "is not a regular file", "fix with:")
}

// Proves L4: files owned by someone else are refused (needs root to chown).
func TestRefusesForeignOwner(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("needs root to chown")
	}
	path := newClosedLedger(t)
	if err := os.Chown(path, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	wantRefusal(t, path, "is owned by uid 65534", "fix with: chown")
}
