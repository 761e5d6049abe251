package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"sync"

	"github.com/mark3labs/mcp-go/server"
)

// mcp-go answers every request mcp-guard does not answer itself
// (methods.go) and the stdio fast path does not serve, and encodes each
// result from its own types: keys sorted, unknown fields dropped, text
// HTML-escaped. So a handler that has the server's own result bytes leaves
// them here under its request (deposit), and the host transport, when
// mcp-go writes the answer to that request, puts them in place of mcp-go's
// result (spliceAnswer). Requests of the stateless protocol keep mcp-go's
// result, which carries what that protocol adds. A result from a server
// mcp-guard speaks 2026-07-28 to reaches a host of an earlier revision
// without that revision's envelope (eras.go).

// fastKeyKey is the context key under which the stdio fast path names the
// request a handler serves (mcp-go's requests are found by cancelBook).
type fastKeyKey struct{}

// rawResults are the servers' own results waiting for their answers to be
// written, by request. Its zero value is ready.
type rawResults struct {
	mu   sync.Mutex
	raw  map[reqKey]json.RawMessage
	errs map[reqKey]json.RawMessage // the servers' own error objects (servererr.go)
}

// requestKey is the request ctx serves, on either path.
func (p *Proxy) requestKey(ctx context.Context) (reqKey, bool) {
	if key, ok := ctx.Value(fastKeyKey{}).(reqKey); ok {
		return key, true
	}
	info := server.RequestProtocolInfoFromContext(ctx)
	if info == nil || info.Modern {
		return reqKey{}, false
	}
	p.cancels.mu.Lock()
	defer p.cancels.mu.Unlock()
	key, ok := p.cancels.byInfo[info]
	return key, ok
}

// deposit leaves raw as the result of the request ctx serves.
func (p *Proxy) deposit(ctx context.Context, raw json.RawMessage) {
	key, ok := p.requestKey(ctx)
	if !ok {
		return
	}
	r := &p.results
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.raw == nil {
		r.raw = map[reqKey]json.RawMessage{}
	}
	r.raw[key] = raw
}

// depositError leaves obj as the error object of the answer to the request
// ctx serves.
func (p *Proxy) depositError(ctx context.Context, obj json.RawMessage) {
	key, ok := p.requestKey(ctx)
	if !ok {
		return
	}
	r := &p.results
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.errs == nil {
		r.errs = map[reqKey]json.RawMessage{}
	}
	r.errs[key] = obj
}

// take removes and returns what was deposited for key: a result or an
// error object.
func (r *rawResults) take(key reqKey) (raw, errObj json.RawMessage, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	raw, okRaw := r.raw[key]
	errObj, okErr := r.errs[key]
	delete(r.raw, key)
	delete(r.errs, key)
	return raw, errObj, okRaw || okErr
}

// answerEdit makes, of the member ("result" or "error") of an answer
// mcp-go wrote, what the host gets in its place; ok false keeps mcp-go's.
type answerEdit func(name string, value []byte) (out []byte, ok bool)

// hostResultOf is what the host's answer to the request key must carry in
// place of mcp-go's result or error: what a handler deposited. f is nil
// when mcp-go's answer stands.
func (p *Proxy) hostResultOf(key reqKey) answerEdit {
	raw, errObj, deposited := p.results.take(key)
	if !deposited {
		return nil
	}
	return func(name string, _ []byte) ([]byte, bool) {
		switch {
		case name == "result" && raw != nil:
			return raw, true
		case name == "error" && errObj != nil:
			return errObj, true
		}
		return nil, false
	}
}

// spliceAnswer returns msg, a JSON-RPC message mcp-go wrote, with its
// result or error replaced by what f makes of it, on one line; msg as it
// was when it is neither or f declines.
func spliceAnswer(msg []byte, f answerEdit) []byte {
	if f == nil {
		return msg
	}
	body := bytes.TrimRight(msg, "\r\n")
	name := "result"
	value, ok := member(body, name)
	if !ok {
		name = "error"
		if value, ok = member(body, name); !ok {
			return msg
		}
	}
	res, ok := f(name, value)
	if !ok {
		return msg
	}
	if one, _, err := oneLine(res); err == nil {
		res = one
	}
	out, ok := replaceMember(body, name, res)
	if !ok {
		return msg
	}
	return append(out, msg[len(body):]...)
}
