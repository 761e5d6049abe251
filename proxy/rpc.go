package proxy

import (
	"bytes"
	"encoding/json"
)

// JSON-RPC and MCP error codes the proxy answers an upstream's request with.
const (
	codeInvalidParams = -32602
	// codeRejected answers a sampling or elicitation request the operator
	// did not let through (denied, not decided in time): the code the MCP
	// specification shows for a user who rejects a sampling request.
	codeRejected = -1
)

// jsonString returns s encoded as a JSON string without HTML escaping.
func jsonString(s string) json.RawMessage {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a Go string always encodes
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// oneLine returns raw with any insignificant line breaks removed, so it can
// be written on a stdio line. JSON strings cannot hold raw line breaks, so
// compacting changes only whitespace between tokens. It reports whether the
// bytes changed.
func oneLine(raw json.RawMessage) (json.RawMessage, bool, error) {
	if bytes.IndexByte(raw, '\n') < 0 && bytes.IndexByte(raw, '\r') < 0 {
		return raw, false, nil
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return nil, false, err
	}
	return b.Bytes(), true, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
