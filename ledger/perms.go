package ledger

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// sidecarSuffixes are the files SQLite keeps next to the database.
func sidecarSuffixes() []string { return []string{"-wal", "-shm", "-journal"} }

// prepareDir makes dir (0700) when it is missing and refuses it when it is a
// symlink, not a directory, not ours, or writable by group/others without the
// sticky bit.
func prepareDir(dir string) error {
	if _, err := os.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("ledger: create directory %s: %w", dir, err)
		}
		if err := os.Chmod(dir, 0o700); err != nil {
			return fmt.Errorf("ledger: chmod directory %s: %w", dir, err)
		}
	}
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("ledger: directory %s: %w", dir, err)
	}
	return checkDir(dir, fi)
}

func checkDir(dir string, fi fs.FileInfo) error {
	if fi.Mode()&fs.ModeSymlink != 0 {
		target, _ := filepath.EvalSymlinks(dir)
		return refuse(fmt.Sprintf("ledger: directory %s is a symbolic link (to %s); fix with: use the real directory %s in the ledger path", dir, target, target))
	}
	if !fi.IsDir() {
		return refuse(fmt.Sprintf("ledger: %s is not a directory (%s); fix with: remove it or choose another ledger path", dir, fi.Mode().Type()))
	}
	if uid, ok := ownerUID(fi); ok && uid != os.Getuid() {
		return refuse(fmt.Sprintf("ledger: directory %s is owned by uid %d, not by you (uid %d); fix with: choose a ledger path in a directory you own", dir, uid, os.Getuid()))
	}
	perm := fi.Mode().Perm()
	if perm&0o022 != 0 && fi.Mode()&fs.ModeSticky == 0 {
		return refuse(fmt.Sprintf("ledger: directory %s is mode %04o, %s, so others could replace the ledger; fix with: chmod 700 %s", dir, perm, describeAccess(perm&0o022), dir))
	}
	return nil
}

// createOwnerOnly creates path 0600 whatever the umask. It reports created ==
// false, and no error, when the file already exists. It never opens an
// existing file (see the POSIX lock trap in the package doc).
func createOwnerOnly(path string) (created bool, err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW|syscall.O_CLOEXEC, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("ledger: create %s: %w", path, err)
	}
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return true, fmt.Errorf("ledger: chmod %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return true, fmt.Errorf("ledger: sync %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return true, fmt.Errorf("ledger: close %s: %w", path, err)
	}
	return true, syncDir(filepath.Dir(path))
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("ledger: open directory %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) {
		return fmt.Errorf("ledger: sync directory %s: %w", dir, err)
	}
	return nil
}

// checkFiles checks the database and any sidecar present, with Lstat only.
func checkFiles(path string) error {
	if err := checkFile(path, true); err != nil {
		return err
	}
	for _, s := range sidecarSuffixes() {
		if err := checkFile(path+s, false); err != nil {
			return err
		}
	}
	return nil
}

func checkFile(path string, required bool) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) && !required {
		return nil
	}
	if err != nil {
		return fmt.Errorf("ledger: %s: %w", path, err)
	}
	mode := fi.Mode()
	if mode&fs.ModeSymlink != 0 {
		target, _ := os.Readlink(path)
		return refuse(fmt.Sprintf("ledger: %s is a symbolic link (to %s); refusing to follow it; fix with: point the ledger path at the real file, or replace the link with the file itself", path, target))
	}
	if !mode.IsRegular() {
		return refuse(fmt.Sprintf("ledger: %s is not a regular file (%s); fix with: remove it or choose another ledger path", path, describeType(mode)))
	}
	if uid, ok := ownerUID(fi); ok && uid != os.Getuid() {
		return refuse(fmt.Sprintf("ledger: %s is owned by uid %d, not by you (uid %d); fix with: chown %d %s (as root), or choose another ledger path", path, uid, os.Getuid(), os.Getuid(), path))
	}
	if perm := mode.Perm(); perm&0o077 != 0 {
		return refuse(fmt.Sprintf("ledger: %s is mode %04o, %s; fix with: chmod 600 %s", path, perm, describeAccess(perm&0o077), path))
	}
	if n, ok := linkCount(fi); ok && n != 1 {
		return refuse(fmt.Sprintf("ledger: %s has %d hard links, so another name reaches the same data; fix with: find the other names (find / -xdev -samefile %s) and remove them", path, n, path))
	}
	return nil
}

func ownerUID(fi fs.FileInfo) (int, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(st.Uid), true
}

func linkCount(fi fs.FileInfo) (uint64, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return uint64(st.Nlink), true
}

func describeType(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	default:
		return "mode " + m.String()
	}
}

// describeAccess renders group/other permission bits in words, e.g. 0o044 ->
// "readable by group and others".
func describeAccess(bits fs.FileMode) string {
	verbs := func(b fs.FileMode) string {
		var v []string
		if b&4 != 0 {
			v = append(v, "readable")
		}
		if b&2 != 0 {
			v = append(v, "writable")
		}
		if b&1 != 0 {
			v = append(v, "executable")
		}
		return strings.Join(v, " and ")
	}
	g, o := (bits>>3)&7, bits&7
	switch {
	case g != 0 && g == o:
		return verbs(g) + " by group and others"
	case g != 0 && o != 0:
		return verbs(g) + " by group, " + verbs(o) + " by others"
	case g != 0:
		return verbs(g) + " by group"
	default:
		return verbs(o) + " by others"
	}
}
