package main

import (
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-guard/mcp-guard/config"
)

// inProcess reports whether the env runs mcp-guard in this test process:
// unless a test asked for the binary (env.binary) or runs it as another
// user (env.wrap). In process, the command is run, main's body, with the
// environment the binary would be given, and no process is started for it;
// its upstreams are still child processes.
func (e *env) inProcess() bool { return !e.binary && e.wrap == nil }

// envFunc looks names up in a KEY=VALUE list, as the binary started with
// that list as its environment would.
func envFunc(list []string) config.EnvFunc {
	m := make(map[string]string, len(list))
	for _, kv := range list {
		if k, v, ok := strings.Cut(kv, "="); ok {
			m[k] = v
		}
	}
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

// cliEnv is the environment an operator's command (mcpGuard) runs in.
func (e *env) cliEnv() []string {
	return append([]string{"HOME=" + e.dir, "PATH=/usr/bin:/bin"}, e.extra...)
}

// runHere runs mcp-guard with args in this process, in cliEnv, with stdin
// as its input, and returns what it wrote to stdout and stderr, in the order
// written, and its exit code. A command still running after runBound (a
// serve that should have refused to start, say) is stopped, as SIGINT
// would, and the test fails: the package does not hang on it.
func (e *env) runHere(stdin string, args ...string) (string, int) {
	var out lockedBuffer
	ctx, cancel := context.WithTimeout(e.t.Context(), runBound)
	defer cancel()
	code := run(args, cli{ctx: ctx, exe: bins.guard, stdin: strings.NewReader(stdin), stdout: &out, stderr: &out, env: envFunc(e.cliEnv())})
	if ctx.Err() == context.DeadlineExceeded {
		e.t.Errorf("mcp-guard %s (in process) still ran after %s; stopped it", strings.Join(args, " "), runBound)
	}
	return out.String(), code
}

// runBound is how long a command run to its end may take in a test.
const runBound = 2 * time.Minute

// startHere starts mcp-guard with args in this process, in cliEnv, as a
// command that runs until it ends or is stopped (log --follow, auth waiting
// for its sign-in). The test's cleanup stops it.
func (e *env) startHere(stdout, stderr io.Writer, args ...string) *running {
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{t: e.t, what: strings.Join(args, " "), done: make(chan struct{}), cancel: cancel}
	go func() {
		defer close(r.done)
		r.code = run(args, cli{ctx: ctx, exe: bins.guard, stdin: strings.NewReader(""), stdout: stdout, stderr: stderr, env: envFunc(e.cliEnv())})
	}()
	e.t.Cleanup(func() { r.stop() })
	return r
}

// running is a command startHere started.
type running struct {
	t      testing.TB
	what   string
	done   chan struct{} // closed when it has ended
	code   int           // its exit code, once done
	cancel context.CancelFunc
}

// wait returns the command's exit code once it has ended.
func (r *running) wait() int {
	r.t.Helper()
	select {
	case <-r.done:
	case <-time.After(30 * time.Second):
		r.t.Fatalf("mcp-guard %s (in process) did not end within 30s", r.what)
	}
	return r.code
}

// stop ends the command, as SIGINT would, and waits for it.
func (r *running) stop() int {
	r.cancel()
	return r.wait()
}

// serveHere runs `mcp-guard ARGS` (serve, on stdio) in this process, on OS
// pipes as a host starts it (a pipe's buffer, and the poller's reads of
// it), in serveEnv, logging to stderr (the caller shows it when the test
// fails). It returns the host's ends: what the host writes to serve, whose
// Close waits for serve to end, and what serve writes to the host. The test
// fails if serve has not returned 30s after its stdin closed.
func (e *env) serveHere(stderr *lockedBuffer, args ...string) (io.WriteCloser, io.ReadCloser) {
	e.t.Helper()
	inR, inW, err := os.Pipe()
	if err != nil {
		e.t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		run(args, cli{ctx: ctx, exe: bins.guard, stdin: inR, stdout: outW, stderr: stderr, env: envFunc(e.serveEnv())})
		outW.Close()
		inR.Close()
	}()
	in := &serveInput{File: inW, done: done}
	e.t.Cleanup(func() {
		if err := in.Close(); err != nil {
			e.t.Error(err)
			cancel()
			<-done
		}
		cancel()
		outR.Close()
	})
	return in, outR
}

// serveInput is the host's end of serve's stdin. Closing it waits for
// serve to end, as closing a child's stdin and waiting for the child does:
// what serve logs and records at its end is there once Close returns.
type serveInput struct {
	*os.File
	done <-chan struct{}
}

func (in *serveInput) Close() error {
	in.File.Close()
	select {
	case <-in.done:
		return nil
	case <-time.After(30 * time.Second):
		return errors.New("mcp-guard serve (in process) did not end within 30s of its stdin closing")
	}
}

// newBinaryEnv is newEnv for a test that needs mcp-guard as its own
// process (the sandbox launcher run directly; a benchmark of serve).
func newBinaryEnv(t testing.TB) *env {
	t.Helper()
	e := newEnv(t)
	e.binary = true
	return e
}

// serveTransport is the go-sdk client's transport to `mcp-guard ARGS`
// (serve, on stdio) logging to stderr: in this process, or the binary
// started in serveEnv when the env asks for it.
func (e *env) serveTransport(stderr *lockedBuffer, args ...string) mcp.Transport {
	e.t.Helper()
	if e.inProcess() {
		in, out := e.serveHere(stderr, args...)
		return &mcp.IOTransport{Reader: out, Writer: in}
	}
	cmd := e.guardCmd(args...)
	cmd.Stderr = stderr
	return &mcp.CommandTransport{Command: cmd, TerminateDuration: 5 * time.Second}
}
