//go:build !(linux || freebsd || openbsd || netbsd || dragonfly || darwin)

package notify

import (
	"errors"
	"log/slog"
)

// Available says how this machine shows desktop notifications: mcp-guard
// has no way on this system.
func Available(env func(string) (string, bool)) (how string, ok bool) {
	return "desktop notifications are not supported on this system", false
}

// New fails: mcp-guard cannot send desktop notifications on this system.
func New(env func(string) (string, bool), log *slog.Logger) (*Notifier, error) {
	return nil, errors.New("notify: desktop notifications are not supported on this system")
}
