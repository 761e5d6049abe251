package hostconfig

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// What wrap keeps beside the config file at path.
const (
	// BackupSuffix names the file's bytes before the first wrap, written once
	// (mode 0600) and never overwritten.
	BackupSuffix = ".mcp-guard-backup"
	// RecordSuffix names the bytes the last wrap wrote (mode 0600), so that
	// an edit made since can be told and shown.
	RecordSuffix = ".mcp-guard-wrapped"
)

// BackupPath is where the backup of the config at path is kept.
func BackupPath(path string) string { return path + BackupSuffix }

// RecordPath is where the record of what wrap wrote to path is kept.
func RecordPath(path string) string { return path + RecordSuffix }

// Saved is what earlier wraps left beside a config file.
type Saved struct {
	Backup []byte // the file before the first wrap; nil: there is no backup
	Wrote  []byte // what the last wrap wrote; nil: there is no record
}

// ReadSaved reads the backup and the record beside the config at path;
// either may be missing.
func ReadSaved(path string) (*Saved, error) {
	var s Saved
	var err error
	if s.Backup, err = readIfExists(BackupPath(path)); err != nil {
		return nil, err
	}
	if s.Wrote, err = readIfExists(RecordPath(path)); err != nil {
		return nil, err
	}
	return &s, nil
}

func readIfExists(path string) ([]byte, error) {
	b, err := Read(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return b, err
}

// Unchanged reports whether cur, the config file's bytes now, is what the
// last wrap wrote or still the backup: replacing it loses nothing.
func (s *Saved) Unchanged(cur []byte) bool {
	if s.Backup == nil {
		return false
	}
	return (s.Wrote != nil && bytes.Equal(cur, s.Wrote)) || bytes.Equal(cur, s.Backup)
}

// Save replaces the config at path, whose bytes are cur, with next. When s
// holds no backup, cur is first saved as the backup, which fails if a backup
// exists after all: a backup is never overwritten. Then next is recorded as
// what wrap wrote, and written over path with path's mode.
func Save(path string, cur, next []byte, s *Saved) error {
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("desktop: %s: %w", path, bare(err))
	}
	if s.Backup == nil {
		if err := writeAtomic(BackupPath(path), cur, 0o600, false); err != nil {
			if errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("desktop: save the backup %s: it exists already, and a backup is never overwritten", BackupPath(path))
			}
			return fmt.Errorf("desktop: save the backup %s: %w", BackupPath(path), err)
		}
	}
	if err := writeAtomic(RecordPath(path), next, 0o600, true); err != nil {
		return fmt.Errorf("desktop: write %s: %w", RecordPath(path), err)
	}
	if err := writeAtomic(path, next, fi.Mode().Perm(), true); err != nil {
		return fmt.Errorf("desktop: write %s: %w", path, err)
	}
	return nil
}

// ErrNoBackup is returned by Restore when there is nothing to restore.
var ErrNoBackup = errors.New("no backup")

// Restore writes the backup in s over the config at path, byte for byte and
// with path's mode (0600 if path is gone), then removes the record and the
// backup. Whether that loses edits made since the wrap is the caller's to
// check (see [Saved.Unchanged]).
func Restore(path string, s *Saved) error {
	if s.Backup == nil {
		return ErrNoBackup
	}
	perm := fs.FileMode(0o600)
	if fi, err := os.Stat(path); err == nil {
		perm = fi.Mode().Perm()
	}
	if err := writeAtomic(path, s.Backup, perm, true); err != nil {
		return fmt.Errorf("desktop: restore %s: %w", path, err)
	}
	// The record first: a backup without a record that equals the file is
	// still recognised as unchanged if this stops half-way.
	for _, p := range []string{RecordPath(path), BackupPath(path)} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("desktop: remove %s: %w", p, bare(err))
		}
	}
	return syncDir(filepath.Dir(path))
}
