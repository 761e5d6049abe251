package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
)

// fileWitness appends each head as one JSON line to a file opened
// O_APPEND. It holds against the ledger's owner only if the file is where
// that account cannot write (another user's, an append-only mount, a
// file another team collects); for tests it is a plain file.
type fileWitness struct {
	name string
	path string
	mu   sync.Mutex
}

// accessWX is access(2)'s W_OK|X_OK: a file can be created in the directory.
const accessWX = 0x2 | 0x1

func (w *fileWitness) Name() string { return w.name }

func (w *fileWitness) open() (*os.File, error) {
	f, err := os.OpenFile(w.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("witness %s: %w", w.name, err)
	}
	return f, nil
}

// Probe checks that the file can be appended to (or created in its
// directory) without creating it.
func (w *fileWitness) Probe(ctx context.Context) error {
	f, err := os.OpenFile(w.path, os.O_WRONLY|os.O_APPEND, 0)
	if err == nil {
		return f.Close()
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("witness %s: %w", w.name, err)
	}
	if err := syscall.Access(filepath.Dir(w.path), accessWX); err != nil {
		return fmt.Errorf("witness %s: cannot create %s: %w", w.name, w.path, err)
	}
	return nil
}

// Commit appends h in one write, so concurrent writers' lines never mix.
func (w *fileWitness) Commit(ctx context.Context, h Head) error {
	b, err := json.Marshal(h)
	if err != nil {
		return fmt.Errorf("witness %s: %w", w.name, err)
	}
	b = append(b, '\n')
	w.mu.Lock()
	defer w.mu.Unlock()
	f, err := w.open()
	if err != nil {
		return err
	}
	if _, err := f.Write(b); err != nil {
		f.Close()
		return fmt.Errorf("witness %s: append: %w", w.name, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("witness %s: append: %w", w.name, err)
	}
	return nil
}

func (w *fileWitness) Close() error { return nil }
