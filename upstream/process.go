package upstream

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"
)

// process is an upstream child started by mcp-guard itself: an explicit
// environment, its own process group, stderr to a writer of mcp-guard's, and
// mcp-guard's own Wait. Its stdin and stdout are plain pipes mcp-guard owns,
// so the child exiting never discards a reply it already wrote.
type process struct {
	cmd     *exec.Cmd
	stdin   *os.File      // write end
	stdout  *os.File      // read end
	exited  chan struct{} // closed once Wait has returned
	waitErr error
}

func startProcess(argv []string, env []string, dir string, stderr io.Writer) (*process, error) {
	if len(argv) == 0 {
		return nil, errors.New("empty command")
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = env
	if cmd.Env == nil {
		cmd.Env = []string{} // nil would mean "inherit mcp-guard's environment"
	}
	cmd.Dir = dir
	cmd.Stderr = stderr
	// A helper the server left behind may hold its stderr open; Wait does
	// not wait for it longer than this once the server itself has exited.
	cmd.WaitDelay = 500 * time.Millisecond
	cmd.SysProcAttr = sysProcAttr()
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	cmd.Stdin, cmd.Stdout = inR, outW
	err = cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, err
	}
	p := &process{cmd: cmd, stdin: inW, stdout: outR, exited: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// status describes how the process ended; call it after exited is closed.
func (p *process) status() string {
	if p.waitErr == nil {
		return "exit status 0"
	}
	return p.waitErr.Error()
}

// signalGroup sends sig to the process group, reaching grandchildren such as
// the node process behind npx.
func (p *process) signalGroup(sig syscall.Signal) {
	_ = syscall.Kill(-p.cmd.Process.Pid, sig)
}

// stop ends the process and everything in its group: close stdin (the MCP
// stdio shutdown), then SIGTERM, then SIGKILL. The group is killed even when
// the direct child has already exited, so no orphan is left behind.
func (p *process) stop(grace time.Duration) {
	_ = p.stdin.Close()
	select {
	case <-p.exited:
	case <-time.After(grace):
		p.signalGroup(syscall.SIGTERM)
		select {
		case <-p.exited:
		case <-time.After(grace):
		}
	}
	p.signalGroup(syscall.SIGKILL)
	<-p.exited
}

func (p *process) String() string {
	return fmt.Sprintf("pid %d", p.cmd.Process.Pid)
}
