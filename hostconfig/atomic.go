package hostconfig

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
)

// writeAtomic writes data to path so that a reader, or a crash, sees either
// the old file or the whole new one: a temporary file in the same directory
// is written with mode perm and synced, then renamed over path (or, when
// replace is false, linked to path, which fails with fs.ErrExist if path
// exists and leaves it as it is), then the directory is synced.
func writeAtomic(path string, data []byte, perm fs.FileMode, replace bool) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return bare(err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // after a rename or link, it is gone or a second name
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return bare(err)
	}
	if replace {
		err = os.Rename(tmp, path)
	} else {
		err = os.Link(tmp, path)
	}
	if err != nil {
		var le *os.LinkError
		if errors.As(err, &le) {
			return le.Err
		}
		return err
	}
	return syncDir(dir)
}

// syncDir makes a rename or removal in dir durable.
func syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil // directories cannot be synced there; NTFS journals renames
	}
	d, err := os.Open(dir)
	if err != nil {
		return bare(err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, bare(err))
	}
	return nil
}

// WriteFile replaces the file at path with data, atomically (see
// writeAtomic), with mode perm.
func WriteFile(path string, data []byte, perm fs.FileMode) error {
	return writeAtomic(path, data, perm, true)
}
