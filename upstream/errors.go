package upstream

import (
	"errors"
	"fmt"
)

// ErrClosed is returned for calls on a connection that has ended.
var ErrClosed = errors.New("connection closed")

// HostSafeError is a failure whose text names nothing local (no path, URL,
// command, environment or ledger detail): it may reach the host as it is.
type HostSafeError struct{ Msg string }

func (e *HostSafeError) Error() string { return e.Msg }

// HostSafef makes a failure whose text may reach the host. Give it only
// names the host already knows (server prefixes, limits) and numbers.
func HostSafef(format string, a ...any) error {
	return &HostSafeError{fmt.Sprintf(format, a...)}
}

// EndedError is why an upstream is gone (Client.Err). Its text is for the
// operator (it may name the server's stderr log); the host hears Host, or
// only that the server ended.
type EndedError struct {
	Err  error
	Host string // what the host may be told; "" for fixed words
}

func (e *EndedError) Error() string { return e.Err.Error() }
func (e *EndedError) Unwrap() error { return e.Err }

// StatusError is an HTTP answer mcp-guard cannot use. Safe: its text
// names nothing local (a redirect's names an address), so it may reach
// the host.
type StatusError struct {
	Code int
	Msg  string
	Safe bool
}

func (e *StatusError) Error() string { return e.Msg }
