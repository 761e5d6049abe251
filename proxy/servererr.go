package proxy

import (
	"encoding/json"
	"errors"

	"github.com/mcp-guard/mcp-guard/internal/safetext"
	up "github.com/mcp-guard/mcp-guard/upstream"
)

// A request the server answered with a JSON-RPC error reaches the host
// with that error object as the server wrote it (its code, message and
// data, member order and escapes), not as an mcp-guard error naming it: the
// server decided it, not mcp-guard. Only server text that needs escaping
// is escaped, in place. The ledger call and serve's log still record it.
// Two kinds stay mcp-guard's own words (hostFailureText): an error object
// with members JSON-RPC does not define, and -32042 (URL elicitation
// required), with which a server would have the host open a URL that
// allow_elicitation did not allow.

// codeURLElicitationRequired is the error by which a server asks the host
// to start a URL elicitation (2025-11-25).
const codeURLElicitationRequired = -32042

// hostError is a failure as the host is told it: text (hostFailureText),
// and, when it is the server's own error that may pass, that error object.
type hostError struct {
	text   string
	server json.RawMessage
}

func (e *hostError) Error() string { return e.text }

// serverErrorObject is the error object the host gets for err when err is
// the server's own JSON-RPC error and may pass: its bytes on one line, any
// message or data string that needs escaping escaped in place.
func serverErrorObject(err error) (json.RawMessage, bool) {
	var rpc *up.RPCError
	if !errors.As(err, &rpc) || len(rpc.Raw) == 0 || rpc.Code == codeURLElicitationRequired {
		return nil, false
	}
	out, _, cerr := oneLine(rpc.Raw)
	if cerr != nil {
		return nil, false
	}
	names, ok := memberNames(out)
	if !ok {
		return nil, false
	}
	for _, n := range names {
		if n != "code" && n != "message" && n != "data" {
			return nil, false
		}
	}
	if shown := safetext.Escape(rpc.Message); shown != rpc.Message {
		if out, ok = replaceMember(out, "message", jsonString(shown)); !ok {
			return nil, false
		}
	}
	if data, ok := member(out, "data"); ok && needsEscape(data) {
		clean, err := sanitizeJSON(data)
		if err != nil {
			return nil, false
		}
		if out, ok = replaceMember(out, "data", clean); !ok {
			return nil, false
		}
	}
	return out, true
}

// needsEscape reports whether any string of a JSON value (member names
// too) is not shown as it is.
func needsEscape(raw json.RawMessage) bool {
	clean, err := sanitizeJSON(raw)
	if err != nil {
		return true
	}
	var a, b any
	if json.Unmarshal(raw, &a) != nil || json.Unmarshal(clean, &b) != nil {
		return true
	}
	ab, _ := json.Marshal(a)
	bb, _ := json.Marshal(b)
	return string(ab) != string(bb)
}
