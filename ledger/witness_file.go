package ledger

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
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

func (w *fileWitness) Name() string { return w.name }

func (w *fileWitness) open() (*os.File, error) {
	f, err := os.OpenFile(w.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("witness %s: %w", w.name, err)
	}
	return f, nil
}

func (w *fileWitness) Probe(ctx context.Context) error {
	f, err := w.open()
	if err != nil {
		return err
	}
	return f.Close()
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
