//go:build linux

package oauth

import (
	"testing"

	"github.com/mcp-guard/mcp-guard/sessionbus/sessionbustest"
)

// The keyring tests run against a real Secret Service: gnome-keyring-daemon
// on a private session bus, its keyrings in the test's directories, the
// user's own keyring and bus untouched.

// startSecretService starts a private session bus and gnome-keyring-daemon
// on it (sessionbustest.StartSecretService) and returns the environment that
// names the bus, and its address.
func startSecretService(t *testing.T) (env func(string) (string, bool), addr string) {
	t.Helper()
	addr = sessionbustest.StartSecretService(t)
	return func(k string) (string, bool) {
		if k == "DBUS_SESSION_BUS_ADDRESS" {
			return addr, true
		}
		return "", false
	}, addr
}
