// Package sessionbus finds and dials the D-Bus session bus the way
// mcp-guard's desktop features need it: from the environment it is
// given, never starting a bus. godbus's dbus.SessionBus is not used: it
// runs dbus-launch when no bus is known.
package sessionbus

import (
	"context"
	"os"
	"path/filepath"

	"github.com/godbus/dbus/v5"
)

// Address is the session bus's address: $DBUS_SESSION_BUS_ADDRESS, else
// the socket a systemd user session keeps at $XDG_RUNTIME_DIR/bus; ""
// when there is neither. It never starts a bus (no dbus-launch).
func Address(env func(string) (string, bool)) string {
	if a, ok := env("DBUS_SESSION_BUS_ADDRESS"); ok && a != "" {
		return a
	}
	dir, ok := env("XDG_RUNTIME_DIR")
	if !ok || dir == "" || !filepath.IsAbs(dir) {
		return ""
	}
	p := filepath.Join(dir, "bus")
	if fi, err := os.Stat(p); err == nil && fi.Mode()&os.ModeSocket != 0 {
		return "unix:path=" + p
	}
	return ""
}

// Dial connects to the bus at addr, authenticates and says Hello within
// ctx: a peer that never answers is cut off when ctx ends.
func Dial(ctx context.Context, addr string) (*dbus.Conn, error) {
	conn, err := dbus.Dial(addr)
	if err != nil {
		return nil, err
	}
	// Auth and Hello read from the bus without a context.
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	err = conn.Auth(nil)
	if err == nil {
		err = conn.Hello()
	}
	if !stop() || err != nil {
		conn.Close()
		if err == nil {
			err = ctx.Err()
		}
		return nil, err
	}
	return conn, nil
}
