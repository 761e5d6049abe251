//go:build linux

package sessionbustest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
)

// outBuffer is a daemon's output, written by exec's copying goroutine.
type outBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *outBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *outBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// needKeyringDaemon returns gnome-keyring-daemon's path. Without it the test
// is skipped, except under CI (CI set), where it fails: .ci/run installs
// it.
func needKeyringDaemon(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("gnome-keyring-daemon")
	if err == nil {
		return p
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("gnome-keyring-daemon is not installed (apt-get install gnome-keyring), and CI must test the keyring store: %v", err)
	}
	t.Skip("gnome-keyring-daemon is not installed (apt-get install gnome-keyring): the keyring store is not tested")
	return ""
}

// StartSecretService starts a private session bus and gnome-keyring-daemon
// on it, its login keyring created and unlocked with a password given on
// stdin, and returns the bus's address. Both are stopped
// when t ends: the keyring daemon as its whole process group.
func StartSecretService(t testing.TB) (addr string) {
	t.Helper()
	daemon := needKeyringDaemon(t)
	addr = StartBus(t)
	home := t.TempDir()
	// The daemon's control socket is in XDG_RUNTIME_DIR: a short path.
	run, err := os.MkdirTemp("", "keyring-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(run) })
	cmd := exec.Command(daemon, "--foreground", "--components=secrets", "--unlock")
	cmd.Env = []string{
		"PATH=" + os.Getenv("PATH"),
		"DBUS_SESSION_BUS_ADDRESS=" + addr,
		"HOME=" + home,
		"XDG_DATA_HOME=" + filepath.Join(home, "data"),
		"XDG_CONFIG_HOME=" + filepath.Join(home, "config"),
		"XDG_CACHE_HOME=" + filepath.Join(home, "cache"),
		"XDG_RUNTIME_DIR=" + run,
	}
	cmd.Stdin = strings.NewReader("test\n") // the login keyring's password
	out := &outBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start gnome-keyring-daemon: %v", err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
		}
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // what is left of the group
		<-exited
	})

	conn, err := dbus.Connect(addr)
	if err != nil {
		t.Fatalf("connect to the test bus: %v", err)
	}
	defer conn.Close()
	deadline := time.Now().Add(15 * time.Second)
	for {
		var owned bool
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := conn.BusObject().CallWithContext(ctx, "org.freedesktop.DBus.NameHasOwner", 0, "org.freedesktop.secrets").Store(&owned)
		cancel()
		if err == nil && owned {
			break
		}
		select {
		case <-exited:
			t.Fatalf("gnome-keyring-daemon exited before owning %s:\n%s", "org.freedesktop.secrets", out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("gnome-keyring-daemon did not own %s in 15s (%v):\n%s", "org.freedesktop.secrets", err, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return addr
}
