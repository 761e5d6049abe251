//go:build linux || freebsd || openbsd || netbsd || dragonfly

package notify

import "github.com/mcp-guard/mcp-guard/sessionbus"

// sessionBus is the D-Bus session bus's address ([sessionbus.Address]):
// $DBUS_SESSION_BUS_ADDRESS, else $XDG_RUNTIME_DIR/bus when it is a
// socket; "" when there is neither. It never starts a bus.
func sessionBus(env func(string) (string, bool)) string { return sessionbus.Address(env) }
