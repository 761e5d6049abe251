package proxy

import (
	"bytes"
	"encoding/json"
	"sync"
)

// A server's log message is relayed to every host through mcp-go's
// server, which encodes it from its own types: keys sorted, unknown fields
// dropped, text HTML-escaped. So the relay leaves the server's params here
// (expect), under the bytes mcp-go will encode them as, and the host
// transports, when they write that notification, put the server's params
// in its place (rewrite).

// hostOutMax bounds the params waiting to be written: a log message sent
// to no host (none connected) is never written.
const hostOutMax = 256

// hostOut is the servers' params waiting for their notifications to be
// written. Its zero value is ready.
type hostOut struct {
	mu    sync.Mutex
	byEnc map[string]json.RawMessage // by method and mcp-go's params bytes
	order []string                   // keys of byEnc, oldest first
}

// expect leaves raw (the server's params, one line) to be written in place
// of mcpParams, mcp-go's encoding of them, in the next messages of method.
func (o *hostOut) expect(method string, mcpParams, raw json.RawMessage) {
	key := method + "\x00" + string(mcpParams)
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.byEnc == nil {
		o.byEnc = map[string]json.RawMessage{}
	}
	if _, ok := o.byEnc[key]; !ok {
		o.order = append(o.order, key)
	}
	o.byEnc[key] = raw
	for len(o.order) > hostOutMax {
		delete(o.byEnc, o.order[0])
		o.order = o.order[1:]
	}
}

// rewrite returns msg (one notification mcp-go's server sent a host) with
// the server's params in place of mcp-go's, when the relay left them; msg
// as it was otherwise.
func (o *hostOut) rewrite(msg []byte) []byte {
	if !bytes.Contains(msg, []byte(`"method"`)) {
		return msg
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	body := bytes.TrimRight(msg, "\r\n")
	if json.Unmarshal(body, &m) != nil || m.Method == "" || m.ID != nil {
		return msg
	}
	params, ok := member(body, "params")
	if !ok {
		return msg
	}
	o.mu.Lock()
	raw, found := o.byEnc[m.Method+"\x00"+string(params)]
	o.mu.Unlock()
	if !found {
		return msg
	}
	spliced, ok := replaceMember(body, "params", raw)
	if !ok {
		return msg
	}
	return append(spliced, msg[len(body):]...)
}
