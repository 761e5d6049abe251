package proxy

import (
	"errors"
	"fmt"

	up "github.com/mcp-guard/mcp-guard/upstream"
)

// What a host (and so the model) is told when a request fails. The whole
// reason, which may name mcp-guard's own files (its logs, config, ledger),
// an upstream's stderr log, command or URL, or a ledger error, goes to the
// operator: serve's log and the ledger call's outcome. The host is told
// what happened in words that name nothing local, and the ledger call that
// holds the rest. Only text built as hostSafe, an upstream's own JSON-RPC
// error, or this file's fixed words reach it.

// hostSafef makes a failure whose text may reach the host. Give it only
// names the host already knows (server prefixes, limits) and numbers.
func hostSafef(format string, a ...any) error {
	return up.HostSafef(format, a...)
}

// notConnected is what a host is told of a request to a server that is
// not connected now (why is the operator's).
func notConnected(server string) error {
	return hostSafef("its server %q is not connected; mcp-guard is connecting it again", server)
}

// hostFailure is the error a host gets for a request named name (an
// exposed tool or prompt, a URI) that failed after it was recorded as
// ledger call id (0: none).
func hostFailure(name string, id int64, err error) error {
	he := &hostError{text: hostFailureText(name, id, err)}
	he.server, _ = serverErrorObject(err)
	return he
}

// hostFailureText says what happened to name's request without local
// detail, and names its ledger call.
func hostFailureText(name string, id int64, err error) string {
	what := hostReason(err)
	if id > 0 {
		return fmt.Sprintf("mcp-guard: %s: %s (ledger call %d)", name, what, id)
	}
	return fmt.Sprintf("mcp-guard: %s: %s", name, what)
}

// hostReason says what err was without local detail: the text of a
// hostSafe error, an upstream's own JSON-RPC error, or fixed words.
func hostReason(err error) string {
	var (
		safe   *up.HostSafeError
		signIn *up.SignInError
		status *up.StatusError
		rpc    *up.RPCError
		ended  *up.EndedError
	)
	switch {
	case errors.As(err, &safe):
		return safe.Msg
	case errors.As(err, &signIn):
		return signIn.Error()
	case errors.As(err, &status) && status.Safe:
		return status.Msg
	case errors.As(err, &rpc):
		// The server's own answer to the request: its words, not mcp-guard's.
		return fmt.Sprintf("its server answered with error %d: %s", rpc.Code, rpc.Message)
	case errors.As(err, &ended) && ended.Host != "":
		return ended.Host
	case errors.As(err, &ended), errors.Is(err, up.ErrClosed):
		return "its server ended before it answered; mcp-guard starts it again"
	}
	return "the request to its server failed; the operator's log says why"
}
