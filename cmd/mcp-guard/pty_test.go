package main

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// onTerminal is a command started on a pseudo-terminal of its own: in is
// what is typed at it, out everything it printed so far; ended is closed
// when the terminal has no process left to print (the command and all it
// started have exited).
type onTerminal struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	out   *lockedBuffer
	ended chan struct{}
}

// startOnTerminal starts cmd with a new pseudo-terminal as its controlling
// terminal and its standard input, output and error, in a session and
// process group of its own. The test's cleanup kills that whole process
// group (cmd and whatever it started: a pager, a shell) and waits for cmd,
// so nothing it ran outlives the test.
func startOnTerminal(t testing.TB, cmd *exec.Cmd) *onTerminal {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("pseudo-terminal: %v", err)
	}
	fd := int(master.Fd())
	if err := unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0); err != nil {
		master.Close()
		t.Fatalf("pseudo-terminal: unlock: %v", err)
	}
	n, err := unix.IoctlGetUint32(fd, unix.TIOCGPTN)
	if err != nil {
		master.Close()
		t.Fatalf("pseudo-terminal: number: %v", err)
	}
	slave, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		master.Close()
		t.Fatalf("pseudo-terminal: %v", err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	err = cmd.Start()
	slave.Close()
	if err != nil {
		master.Close()
		t.Fatalf("start %s on a terminal: %v", cmd.Path, err)
	}
	term := &onTerminal{cmd: cmd, in: master, out: &lockedBuffer{}, ended: make(chan struct{})}
	go func() {
		defer close(term.ended)
		io.Copy(term.out, master) // ends with EIO once no process holds the terminal
	}()
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
		master.Close()
		<-term.ended
	})
	return term
}
