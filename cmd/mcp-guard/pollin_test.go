package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func nonblocking(t *testing.T, fd int) bool {
	t.Helper()
	flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil {
		t.Fatal(err)
	}
	return flags&unix.O_NONBLOCK != 0
}

// Proves serve's stdin, a blocking pipe as hosts give it, is read through
// the poller (non-blocking) and reads every byte to the end, and is blocking
// again after; a regular file, an already non-blocking pipe and a reader
// that is not a file are left exactly as they are.
func TestPollable_OnlyBlockingPipesAndSockets(t *testing.T) {
	t.Parallel()
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	w := os.NewFile(uintptr(p[1]), "w")
	defer w.Close()
	stdin := os.NewFile(uintptr(p[0]), "stdin")
	defer stdin.Close()
	r, restore := pollable(stdin)
	if r == io.Reader(stdin) {
		t.Fatal("a blocking pipe was left blocking")
	}
	defer restore()
	if !nonblocking(t, p[0]) {
		t.Fatal("the pipe is not non-blocking")
	}
	go func() {
		w.Write([]byte(`{"jsonrpc":"2.0"}` + "\n"))
		w.Close()
	}()
	got, err := io.ReadAll(r)
	if err != nil || string(got) != `{"jsonrpc":"2.0"}`+"\n" {
		t.Fatalf("read %q, %v", got, err)
	}
	restore()
	if nonblocking(t, p[0]) {
		t.Fatal("restore left the pipe non-blocking")
	}

	file, err := os.Create(filepath.Join(t.TempDir(), "in"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	if r, _ := pollable(file); r != io.Reader(file) || nonblocking(t, int(file.Fd())) {
		t.Fatal("a regular file was changed")
	}

	var q [2]int
	if err := unix.Pipe2(q[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		t.Fatal(err)
	}
	unix.Close(q[1])
	already := os.NewFile(uintptr(q[0]), "already")
	defer already.Close()
	if r, _ := pollable(already); r != io.Reader(already) {
		t.Fatal("an already non-blocking pipe was wrapped again")
	}

	sr := strings.NewReader("x")
	if r, _ := pollable(sr); r != io.Reader(sr) {
		t.Fatal("a reader that is not a file was wrapped")
	}
}
