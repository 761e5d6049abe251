package main

import (
	"io"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// pollable returns the host's stdin as a file the Go runtime's poller
// reads, when it is a blocking pipe or socket (as hosts start serve). A read
// then parks the reading goroutine instead of blocking its thread in the
// kernel, so the call it has just handed to a worker runs at once on the
// same thread rather than waiting for another thread to steal it (measured:
// a third off the p50 of a call at one caller, docs/benchmarks.md).
//
// Anything else is returned as it is: a terminal or a regular file
// (O_NONBLOCK on a terminal would outlive serve, in the shell's own stdin),
// a descriptor already non-blocking (os.Stdin polls it already), and a
// reader that is not an *os.File. restore puts the descriptor back in
// blocking mode, for whoever shares it after serve.
func pollable(in io.Reader) (r io.Reader, restore func()) {
	unchanged := func() (io.Reader, func()) { return in, func() {} }
	f, ok := in.(*os.File)
	if !ok {
		return unchanged()
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return unchanged()
	}
	fd := -1
	// Control, unlike Fd, leaves the descriptor's mode as it is.
	if rc.Control(func(d uintptr) { fd = int(d) }) != nil || fd < 0 {
		return unchanged()
	}
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return unchanged()
	}
	if t := st.Mode & unix.S_IFMT; t != unix.S_IFIFO && t != unix.S_IFSOCK {
		return unchanged()
	}
	flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil || flags&unix.O_NONBLOCK != 0 {
		return unchanged()
	}
	// A duplicate descriptor, owned by the new file alone (closing it
	// leaves f's), shares the open file description and so its mode.
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return unchanged()
	}
	if unix.SetNonblock(dup, true) != nil {
		unix.Close(dup)
		return unchanged()
	}
	// os.NewFile sees the descriptor non-blocking and registers it with
	// the poller; f is not read again.
	pf := os.NewFile(uintptr(dup), f.Name())
	return pf, sync.OnceFunc(func() {
		unix.SetNonblock(dup, false)
		pf.Close()
	})
}
