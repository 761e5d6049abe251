package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
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

// SignInError says that a url server that signs in (OAuth) has no usable
// sign-in: its text names the command that signs in, nothing local, so it
// may reach the host (it is a HostSafeError's text).
type SignInError struct{ Server string }

func (e *SignInError) Error() string {
	return fmt.Sprintf("upstream %q needs sign-in: the operator runs `mcp-guard auth %s` (mcp-guard's log says why)", e.Server, e.Server)
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

// HostCancelled is the cause of a context the host cancelled with
// notifications/cancelled (context.WithCancelCause): a request the
// upstream is serving is cancelled upstream with the host's own reason,
// or with none when the host gave none.
type HostCancelled struct {
	Reason    string
	HasReason bool
}

func (e *HostCancelled) Error() string {
	if e.HasReason {
		return "cancelled by the host: " + e.Reason
	}
	return "cancelled by the host"
}

// cancelParams are the params of the notifications/cancelled sent upstream
// for request id when ctx ended: the host's own reason when the host
// cancelled it (none when it gave none), else why mcp-guard gave up.
func cancelParams(ctx context.Context, id string) json.RawMessage {
	var hc *HostCancelled
	switch {
	case errors.As(context.Cause(ctx), &hc) && !hc.HasReason:
		return json.RawMessage(`{"requestId":` + strconv.Quote(id) + `}`)
	case hc != nil:
		return json.RawMessage(`{"requestId":` + strconv.Quote(id) + `,"reason":` + string(jsonString(hc.Reason)) + `}`)
	}
	reason := ctx.Err().Error()
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		reason = "mcp-guard: request timed out"
	}
	return json.RawMessage(`{"requestId":` + strconv.Quote(id) + `,"reason":` + string(jsonString(reason)) + `}`)
}
