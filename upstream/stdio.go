package upstream

import (
	"log/slog"
	"runtime"
	"strings"

	"github.com/mcp-guard/mcp-guard/sandbox"

	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// startStdio spawns the server as a child in its own process group, its
// stderr going to a private log, and initializes it.
func startStdio(ctx context.Context, spec Spec, opts Options) (*Client, error) {
	limits := boundsOf(opts.Limits)
	u := newClient(spec, opts)
	errLog, err := openStderrLog(filepath.Join(opts.LogDir, spec.Name+".stderr.log"), limits.StderrBytes, opts.Redact)
	if err != nil {
		return nil, fmt.Errorf("server %q: %w", spec.Name, err)
	}
	argv, info, err := sandboxed(spec, u.log)
	if err != nil {
		errLog.Close()
		return nil, fmt.Errorf("server %q: %w", spec.Name, err)
	}
	proc, err := startProcess(argv, spec.Env, spec.Dir, errLog)
	if err != nil {
		errLog.Close()
		return nil, fmt.Errorf("server %q: start %q: %w", spec.Name, spec.Command[0], err)
	}
	info.Transport, info.PID = "stdio", proc.cmd.Process.Pid
	u.started = info
	var wmu sync.Mutex
	u.conn = newConn(spec.Name, func(b []byte, _ string) error {
		wmu.Lock()
		defer wmu.Unlock()
		_, err := proc.stdin.Write(b)
		return err
	}, u.log)
	u.conn.onNotify = u.onNotify
	u.conn.onRequest = u.onRequest
	u.stop = func() { proc.stop(2 * time.Second) }
	go u.supervise(proc, errLog)

	ictx, cancel := context.WithTimeout(ctx, limits.StartTimeout)
	defer cancel()
	if err := u.handshake(ictx, spec.Protocol); err != nil {
		u.Close()
		return nil, fmt.Errorf("server %q: %w", spec.Name, err)
	}
	return u, nil
}

// supervise runs the read loop and watches the process. When either ends,
// for whatever reason, the whole process group is stopped and every caller
// learns why. A helper the server left behind cannot keep the connection
// open: when the server exits, its group is killed, which closes its stdout.
func (u *Client) supervise(proc *process, errLog *stderrLog) {
	connDone := make(chan error, 1)
	go func() { connDone <- u.conn.readLines(proc.stdout, u.limits.MessageBytes) }()
	var err error
	select {
	case err = <-connDone:
		if errors.Is(err, ErrLineTooLong) {
			proc.stop(0)
		} else {
			proc.stop(2 * time.Second)
		}
	case <-proc.exited:
		proc.signalGroup(syscall.SIGKILL)
		select {
		case err = <-connDone: // read what it wrote before it died
		case <-time.After(time.Second):
			proc.stdout.Close()
			err = <-connDone
		}
	}
	proc.stdout.Close()
	errLog.Close()
	if errors.Is(err, ErrLineTooLong) {
		u.log.Error("upstream sent an oversized message; stopped it", "limit_bytes", u.limits.MessageBytes)
		msg := fmt.Sprintf("upstream %q sent a message over %d bytes (limits.message_bytes) and was stopped", u.name, u.limits.MessageBytes)
		u.ended(&EndedError{Err: errors.New(msg), Host: msg})
		return
	}
	u.ended(&EndedError{
		Err:  fmt.Errorf("upstream %q exited (%s); its stderr is in %s", u.name, proc.status(), errLog.Path()),
		Host: fmt.Sprintf("upstream %q exited (%s) before it answered; mcp-guard starts it again", u.name, proc.status()),
	})
}

// sandboxed is the argv that starts the server: its command, or for a
// sandboxed server the launcher running it. Where the kernel cannot
// enforce the whole policy the server is not started, unless the policy is
// best effort: then it is started and the log says what is not enforced,
// at every start.
// info says what the sandbox is (nothing when there is none).
func sandboxed(spec Spec, log *slog.Logger) (argv []string, info StartInfo, err error) {
	sb := spec.Sandbox
	if sb == nil {
		return spec.Command, StartInfo{}, nil
	}
	program, eff, err := sandbox.ForCommand(sb.Policy, spec.Command, spec.Dir, sb.Home)
	if err != nil {
		return nil, StartInfo{}, fmt.Errorf("start %q: %w", spec.Command[0], err)
	}
	pl := sandbox.ProbePlan(eff, runtime.GOOS, sb.ABIMax)
	if !pl.Complete() {
		if !eff.BestEffort || pl.OS != "linux" {
			return nil, StartInfo{}, pl.Refusal()
		}
		log.Warn("sandbox is best effort: the kernel does not enforce all of it", "not_enforced", strings.Join(pl.Missing, ", "), "landlock_abi", pl.ABI, "policy", eff.Digest())
	} else {
		log.Debug("sandboxed", "landlock_abi", pl.ABI, "policy", eff.Digest())
	}
	info = StartInfo{Sandbox: eff.Digest(), LandlockABI: pl.ABI, NotEnforced: pl.Missing}
	return sandbox.Launch(sb.Launcher, eff, sb.ABIMax, program, spec.Command), info, nil
}
