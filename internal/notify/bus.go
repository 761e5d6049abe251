//go:build linux || freebsd || openbsd || netbsd || dragonfly

package notify

import (
	"os"
	"path/filepath"
)

// sessionBus is the D-Bus session bus's address: $DBUS_SESSION_BUS_ADDRESS,
// else the socket a systemd user session keeps at $XDG_RUNTIME_DIR/bus;
// "" when there is neither. It never starts a bus (no dbus-launch).
func sessionBus(env func(string) (string, bool)) string {
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
