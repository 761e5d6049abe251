package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"

	"github.com/mark3labs/mcp-go/server"
)

// mcp-go answers every request the stdio fast path does not, and encodes
// each result from its own types: keys sorted, unknown fields dropped,
// text HTML-escaped. So a handler that has the server's own result bytes
// leaves them here under its request (deposit), and the host transport,
// when mcp-go writes the answer to that request, puts them in place of
// mcp-go's result (spliceAnswer). List requests are answered the same way
// with the servers' own definitions (hostraw.go). Requests of the
// stateless protocol (2026-07-28) keep mcp-go's result, which carries what
// that protocol adds.

// fastKeyKey is the context key under which the stdio fast path names the
// request a handler serves (mcp-go's requests are found by cancelBook).
type fastKeyKey struct{}

// rawResults are the servers' own results waiting for their answers to be
// written, by request. Its zero value is ready.
type rawResults struct {
	mu  sync.Mutex
	raw map[reqKey]json.RawMessage
}

// deposit leaves raw as the result of the request ctx serves.
func (p *Proxy) deposit(ctx context.Context, raw json.RawMessage) {
	key, ok := ctx.Value(fastKeyKey{}).(reqKey)
	if !ok {
		info := server.RequestProtocolInfoFromContext(ctx)
		if info == nil || info.Modern {
			return
		}
		p.cancels.mu.Lock()
		key, ok = p.cancels.byInfo[info]
		p.cancels.mu.Unlock()
		if !ok {
			return
		}
	}
	r := &p.results
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.raw == nil {
		r.raw = map[reqKey]json.RawMessage{}
	}
	r.raw[key] = raw
}

// take removes and returns what was deposited for key.
func (r *rawResults) take(key reqKey) (json.RawMessage, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	raw, ok := r.raw[key]
	delete(r.raw, key)
	return raw, ok
}

// hostResultOf is what the host's answer to the request key (method) must
// carry in place of mcp-go's result: the list's items, or what a handler
// deposited. f is nil when mcp-go's result stands.
func (p *Proxy) hostResultOf(key reqKey, method string) func(result []byte) ([]byte, bool) {
	raw, deposited := p.results.take(key)
	if items, ok := listKey[method]; ok {
		return func(result []byte) ([]byte, bool) {
			l, ok := p.hostList(method)
			if !ok {
				return nil, false
			}
			return replaceMember(result, items, l)
		}
	}
	if !deposited {
		return nil
	}
	return func([]byte) ([]byte, bool) { return raw, true }
}

// spliceAnswer returns msg, a JSON-RPC message mcp-go wrote, with its
// result replaced by what f makes of it, on one line; msg as it was when
// it is no result or f declines.
func spliceAnswer(msg []byte, f func(result []byte) ([]byte, bool)) []byte {
	if f == nil {
		return msg
	}
	body := bytes.TrimRight(msg, "\r\n")
	result, ok := member(body, "result")
	if !ok {
		return msg
	}
	res, ok := f(result)
	if !ok {
		return msg
	}
	if one, _, err := oneLine(res); err == nil {
		res = one
	}
	out, ok := replaceMember(body, "result", res)
	if !ok {
		return msg
	}
	return append(out, msg[len(body):]...)
}
