//go:build linux || freebsd || openbsd || netbsd || dragonfly

package notify

import (
	"errors"
	"log/slog"
)

// Available says how this machine shows desktop notifications, and whether
// it can: here, through the D-Bus session bus, when one is known (see
// sessionBus). A serve started from a desktop session has one; a serve on
// a server, in a container or in CI has none.
func Available(env func(string) (string, bool)) (how string, ok bool) {
	if sessionBus(env) == "" {
		return "no D-Bus session bus (DBUS_SESSION_BUS_ADDRESS is not set)", false
	}
	return "the D-Bus session bus", true
}

// New starts a Notifier that sends through the session bus. Its error says
// why none can be sent from here.
func New(env func(string) (string, bool), log *slog.Logger) (*Notifier, error) {
	addr := sessionBus(env)
	if addr == "" {
		return nil, errors.New("notify: no D-Bus session bus: DBUS_SESSION_BUS_ADDRESS is not set and $XDG_RUNTIME_DIR/bus is not a socket")
	}
	return newNotifier(&dbusSender{addr: addr}, log), nil
}
