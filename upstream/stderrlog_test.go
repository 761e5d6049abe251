package upstream

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// Proves a redacting stderr log sees a line whole: a credential split across
// two reads of the pipe is still redacted, a line with no end is written at
// Close, and nothing else changes.
func TestStderrLog_RedactsWholeLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.stderr.log")
	redact := func(b []byte) []byte { return bytes.ReplaceAll(b, []byte("hunter2-secret"), []byte("[redacted]")) }
	l, err := openStderrLog(path, 1<<20, redact)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"plain line\nkey is hunt", "er2-secret ok\n", "last hunter2-secret"} {
		if n, err := l.Write([]byte(w)); err != nil || n != len(w) {
			t.Fatalf("Write(%q) = %d, %v", w, n, err)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := "plain line\nkey is [redacted] ok\nlast [redacted]"; string(got) != want {
		t.Fatalf("log holds %q, want %q", got, want)
	}
}
