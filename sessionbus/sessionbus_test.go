package sessionbus

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mcp-guard/mcp-guard/sessionbus/sessionbustest"
)

func envOf(kv ...string) func(string) (string, bool) {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

// The address is DBUS_SESSION_BUS_ADDRESS, else a socket at
// $XDG_RUNTIME_DIR/bus, else none.
func TestAddress(t *testing.T) {
	// A unix socket path is at most 107 bytes: a short directory, not t.TempDir.
	dir, err := os.MkdirTemp("", "xdg-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	if got := Address(envOf()); got != "" {
		t.Fatalf("no variables: %q", got)
	}
	if got := Address(envOf("XDG_RUNTIME_DIR", dir)); got != "" {
		t.Fatalf("no socket: %q", got)
	}
	os.WriteFile(filepath.Join(dir, "bus"), nil, 0o600)
	if got := Address(envOf("XDG_RUNTIME_DIR", dir)); got != "" {
		t.Fatalf("a plain file taken for the bus: %q", got)
	}
	os.Remove(filepath.Join(dir, "bus"))
	ln, err := net.Listen("unix", filepath.Join(dir, "bus"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if got, want := Address(envOf("XDG_RUNTIME_DIR", dir)), "unix:path="+filepath.Join(dir, "bus"); got != want {
		t.Fatalf("Address = %q, want %q", got, want)
	}
	if got := Address(envOf("XDG_RUNTIME_DIR", "bus-relative")); got != "" {
		t.Fatalf("a relative XDG_RUNTIME_DIR used: %q", got)
	}
	if got := Address(envOf("XDG_RUNTIME_DIR", dir, "DBUS_SESSION_BUS_ADDRESS", "unix:path=/x")); got != "unix:path=/x" {
		t.Fatalf("DBUS_SESSION_BUS_ADDRESS not preferred: %q", got)
	}
}

// Dial connects to a real bus, and gives up on a peer that never answers
// when its context ends.
func TestDial(t *testing.T) {
	addr := sessionbustest.StartBus(t)
	conn, err := Dial(context.Background(), addr)
	if err != nil {
		t.Fatal(err)
	}
	if conn.Names()[0] == "" {
		t.Fatal("no unique name after Hello")
	}
	conn.Close()

	dir, err := os.MkdirTemp("", "mute-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	ln, err := net.Listen("unix", filepath.Join(dir, "bus"))
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, never answered
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := Dial(ctx, "unix:path="+filepath.Join(dir, "bus")); err == nil {
		t.Fatal("Dial to a mute peer succeeded")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Dial to a mute peer took %v", d)
	}
}
