package upstream

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-guard/mcp-guard/config"
	"github.com/mcp-guard/mcp-guard/testdata/fakeupstream"
)

// childEnv, set in a child's environment, makes this test binary the fake
// upstream (testdata/fakeupstream) on its arguments and stdio.
const childEnv = "UPSTREAM_TEST_CHILD=fakeup"

func TestMain(m *testing.M) {
	if os.Getenv("UPSTREAM_TEST_CHILD") == "fakeup" {
		os.Exit(fakeupstream.Run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// A stdio server is a child of mcp-guard's own making: it gets exactly the
// environment its spec names (nothing of mcp-guard's own), its stderr goes
// to its log under LogDir (redacted, never to mcp-guard's), Close ends its
// whole process group (a grandchild it started too), and when it exits on
// its own the call in flight fails and the client says how it ended.
func TestStdio_ChildProcess(t *testing.T) {
	t.Setenv("MCPG_PARENT_ONLY", "the parent's")
	dir := t.TempDir()
	script := filepath.Join(dir, "script.json")
	if err := os.WriteFile(script, []byte(`{"tools":[{"name":"env","inputSchema":{"type":"object"}},{"name":"boom","inputSchema":{"type":"object"}}],
"startupStderr":"starting with token tok-0123456789\n",
"calls":{"env":{"do":"env"},"boom":{"do":"crash","stderr":"boom: going down\n"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	grandchild := filepath.Join(dir, "grandchild.pid")
	// The server starts a helper of its own, as npx starts node, which
	// ignores every signal it can (only killing the group reaches it),
	// then becomes the fake upstream.
	spec := Spec{Name: "kid", Command: []string{"/bin/sh", "-c", `(trap '' HUP INT TERM PIPE; exec sleep 300) & echo $! > "$1"; exec "$0" --script "$2"`, os.Args[0], grandchild, script},
		Env: []string{childEnv, "SERVER_VAR=given"}, Dir: dir}
	logDir := filepath.Join(dir, "logs")
	if err := os.Mkdir(logDir, 0o700); err != nil {
		t.Fatal(err)
	}
	opts := Options{Limits: config.DefaultLimits(), Version: "test", LogDir: logDir,
		Redact: func(b []byte) []byte { return []byte(strings.ReplaceAll(string(b), "tok-0123456789", "[REDACTED]")) }}
	ctx := context.Background()
	u, err := Start(ctx, spec, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	if s := u.Started(); s.Transport != "stdio" || s.PID <= 0 {
		t.Fatalf("started %+v, want stdio with a pid", s)
	}
	res, err := u.CallTool(ctx, "env", []byte(`{}`), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if env := string(res); !strings.Contains(env, "SERVER_VAR=given") || strings.Contains(env, "MCPG_PARENT_ONLY") || strings.Contains(env, "HOME=") {
		t.Fatalf("the child's environment: %s; want SERVER_VAR and nothing of the parent's", env)
	}
	pid := readPid(t, grandchild)
	if gone(pid) {
		t.Fatalf("the server's own child (pid %d) is not running", pid)
	}
	u.Close()
	for i := 0; !gone(pid); i++ {
		if i == 250 {
			t.Fatalf("the server's own child (pid %d) outlived Close", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
	stderr, err := os.ReadFile(filepath.Join(logDir, "kid.stderr.log"))
	if err != nil || !strings.Contains(string(stderr), "starting with token [REDACTED]") || strings.Contains(string(stderr), "tok-0123456789") {
		t.Fatalf("the server's stderr log: %q %v; want its line, the token redacted", stderr, err)
	}

	// A server that exits on its own: the call in flight fails, and the
	// client ends saying how.
	spec.Command = []string{os.Args[0], "--script", script}
	u, err = Start(ctx, spec, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	if _, err := u.CallTool(ctx, "boom", []byte(`{}`), nil, nil); err == nil {
		t.Fatal("a call to a server that exited answered")
	}
	select {
	case <-u.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the client did not end when its server exited")
	}
	if err := u.Err(); err == nil || !strings.Contains(err.Error(), "exit status 3") {
		t.Fatalf("how the server ended: %v; want its exit status 3", err)
	}
	if stderr, _ := os.ReadFile(filepath.Join(logDir, "kid.stderr.log")); !strings.Contains(string(stderr), "boom: going down") {
		t.Fatalf("the server's last words are not in its log: %q", stderr)
	}
}

// gone reports whether pid has ended (or is a zombie, ended but not yet
// reaped by whoever inherited it).
func gone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	st, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	_, after, _ := strings.Cut(string(st), ") ")
	return strings.HasPrefix(after, "Z")
}

// readPid reads the pid a shell wrote to path, waiting for it briefly.
func readPid(t *testing.T, path string) int {
	t.Helper()
	for range 100 {
		if b, err := os.ReadFile(path); err == nil && strings.HasSuffix(string(b), "\n") {
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatal(err)
			}
			return pid
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no pid in %s", path)
	return 0
}
