package proxy

import (
	"bytes"
	"encoding/json"
	"sync"
)

// What mcp-go sends a host on its own (a server's log message relayed to
// every host, a server's sampling or elicitation request relayed to the
// host whose call caused it) it encodes from its own types: keys sorted,
// unknown fields dropped, text HTML-escaped. So the relay leaves the
// server's params here (expect), under the bytes mcp-go will encode them
// as, and the host transports, when mcp-go writes that message, put the
// server's params in its place (rewrite). For a request, the host's answer
// is kept as the host wrote it (answered) for the relay to send upstream
// in place of mcp-go's re-encoding of it.

// hostOutMax bounds the params waiting for mcp-go to write them: a log
// message sent to no host (none connected) is never written.
const hostOutMax = 256

// hostOut is the servers' params waiting for mcp-go's writes. Its zero
// value is ready.
type hostOut struct {
	mu      sync.Mutex
	byEnc   map[string]*outMsg // by method and mcp-go's params bytes
	order   []string           // keys of byEnc, oldest first
	pending map[string]*outMsg // requests written, by host session and request id
	given   []string           // keys of requests the relay gave up on unanswered, oldest first
}

// outMsg is one message's params as its server wrote them, and, for a
// request, the host's answer as the host wrote it.
type outMsg struct {
	raw json.RawMessage
	id  json.RawMessage // the request's id, once written to the host

	mu     sync.Mutex
	answer json.RawMessage
}

// answered returns the host's own result for the request, if it came.
func (m *outMsg) answered() (json.RawMessage, bool) {
	if m == nil {
		return nil, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.answer, m.answer != nil
}

// expect leaves raw (the server's params, one line) to be written in place
// of mcp.Params, mcp-go's encoding of them, in the next message of method.
func (o *hostOut) expect(method string, mcpParams, raw json.RawMessage) *outMsg {
	m := &outMsg{raw: raw}
	key := method + "\x00" + string(mcpParams)
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.byEnc == nil {
		o.byEnc = map[string]*outMsg{}
	}
	if _, ok := o.byEnc[key]; !ok {
		o.order = append(o.order, key)
	}
	o.byEnc[key] = m
	for len(o.order) > hostOutMax {
		delete(o.byEnc, o.order[0])
		o.order = o.order[1:]
	}
	return m
}

// forget drops what expect left for method with mcpParams, and m's
// request if it is still waiting for its answer: the relay is done with it.
// waiting reports whether the request was written to the host and not
// answered; id is its id then.
func (o *hostOut) forget(method string, mcpParams json.RawMessage, m *outMsg) (id json.RawMessage, waiting bool) {
	key := method + "\x00" + string(mcpParams)
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.byEnc[key] == m {
		o.removeLocked(key)
	}
	for k, v := range o.pending {
		if v == m {
			delete(o.pending, k)
			id, waiting = v.id, true
			o.given = append(o.given, k)
			if len(o.given) > hostOutMax {
				o.given = o.given[1:]
			}
		}
	}
	return id, waiting
}

// removeLocked drops key's params. o.mu is held.
func (o *hostOut) removeLocked(key string) {
	delete(o.byEnc, key)
	for i, k := range o.order {
		if k == key {
			o.order = append(o.order[:i], o.order[i+1:]...)
			break
		}
	}
}

// rewrite returns msg (one JSON-RPC message mcp-go wrote to the host of
// session) with the server's params in place of mcp-go's, when the relay
// left them; msg as it was otherwise.
func (o *hostOut) rewrite(session string, msg []byte) []byte {
	if !bytes.Contains(msg, []byte(`"method"`)) {
		return msg
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	body := bytes.TrimRight(msg, "\r\n")
	if json.Unmarshal(body, &m) != nil || m.Method == "" {
		return msg
	}
	params, ok := member(body, "params")
	if !ok {
		return msg
	}
	o.mu.Lock()
	key := m.Method + "\x00" + string(params)
	out, found := o.byEnc[key]
	if found && len(m.ID) > 0 {
		// a request's params are written once: another request with the
		// same params (another relay's) waits for that relay's own
		o.removeLocked(key)
		if o.pending == nil {
			o.pending = map[string]*outMsg{}
		}
		if k, ok := rawIDKey(m.ID); ok {
			out.id = append(json.RawMessage(nil), m.ID...)
			o.pending[session+"\x00"+k] = out
		}
	}
	o.mu.Unlock()
	if !found {
		return msg
	}
	spliced, ok := replaceMember(body, "params", out.raw)
	if !ok {
		return msg
	}
	return append(spliced, msg[len(body):]...)
}

// hostAnswer takes a message the host of session sent: when it answers a
// request rewrite wrote, the request is no longer waiting, and its result
// is kept for the relay as the host wrote it. late reports an answer to a
// request the relay already gave up on (a form withdrawn while the host
// was answering it): nothing waits for it any more.
func (o *hostOut) hostAnswer(session string, msg []byte) (late bool) {
	if !mayName(msg, `"result"`) && !mayName(msg, `"error"`) {
		return false
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(msg, &m) != nil || m.Method != "" {
		return false
	}
	k, ok := rawIDKey(m.ID)
	if !ok {
		return false
	}
	key := session + "\x00" + k
	o.mu.Lock()
	out, found := o.pending[key]
	delete(o.pending, key)
	if !found {
		late = o.takeGivenLocked(key)
	}
	o.mu.Unlock()
	if !found {
		return late
	}
	res, ok := member(msg, "result")
	if !ok {
		return false
	}
	if one, _, err := oneLine(res); err == nil {
		out.mu.Lock()
		out.answer = append(json.RawMessage(nil), one...)
		out.mu.Unlock()
	}
	return false
}

// takeGivenLocked reports whether key names a request the relay gave up
// on, and forgets it: one answer to it is late, a second is not expected.
// o.mu is held.
func (o *hostOut) takeGivenLocked(key string) bool {
	for i, k := range o.given {
		if k == key {
			o.given = append(o.given[:i], o.given[i+1:]...)
			return true
		}
	}
	return false
}
