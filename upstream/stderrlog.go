package upstream

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// stderrLog keeps everything an upstream writes to its stderr in a file of
// its own, never on the host's stdout. Nothing is dropped while it is
// written: when the file passes max bytes it is renamed to "<file>.1"
// (replacing the previous one) and a new file is started, so the disk used is
// bounded by about twice max.
//
// With redact, what is written is redacted line by line: a line is held
// until its end arrives (or it passes redactHold bytes, when it is written
// redacted as it stands), so a credential split across two reads of the
// pipe is still seen whole.
type stderrLog struct {
	mu     sync.Mutex
	path   string
	max    int64
	f      *os.File
	size   int64
	redact func([]byte) []byte
	held   []byte // the start of a line not yet ended (redact only)
}

// redactHold bounds the line a redacting stderr log holds back.
const redactHold = 64 << 10

func openStderrLog(path string, max int64, redact func([]byte) []byte) (*stderrLog, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("stderr log: %w", err)
	}
	l := &stderrLog{path: path, max: max, redact: redact}
	if err := l.open(); err != nil {
		return nil, err
	}
	return l, nil
}

func (l *stderrLog) open() error {
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("stderr log: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("stderr log: %w", err)
	}
	l.f, l.size = f, st.Size()
	return nil
}

func (l *stderrLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return 0, os.ErrClosed
	}
	if l.redact == nil {
		return l.write(p)
	}
	l.held = append(l.held, p...)
	end := bytes.LastIndexByte(l.held, '\n') + 1
	if end == 0 && len(l.held) > redactHold {
		end = len(l.held)
	}
	if end > 0 {
		if _, err := l.write(l.redact(l.held[:end])); err != nil {
			return 0, err
		}
		l.held = append(l.held[:0], l.held[end:]...)
	}
	return len(p), nil
}

// write appends p to the file, rotating it first when p would pass max.
func (l *stderrLog) write(p []byte) (int, error) {
	if l.size > 0 && l.size+int64(len(p)) > l.max {
		if err := l.rotate(); err != nil {
			return 0, err
		}
	}
	n, err := l.f.Write(p)
	l.size += int64(n)
	return n, err
}

func (l *stderrLog) rotate() error {
	l.f.Close()
	if err := os.Rename(l.path, l.path+".1"); err != nil {
		return fmt.Errorf("stderr log: rotate: %w", err)
	}
	return l.open()
}

// Path is the file the log is written to.
func (l *stderrLog) Path() string { return l.path }

func (l *stderrLog) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	if len(l.held) > 0 { // a last line with no end
		l.write(l.redact(l.held))
		l.held = nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}
