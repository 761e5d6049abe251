package upstream

import (
	"context"
	"sync"
)

// callers are the requests in flight to one server that a request it
// makes may be on behalf of: each tools/call, and each request Request
// forwards.
type callers struct {
	mu   sync.Mutex
	seq  uint64
	ctxs map[uint64]context.Context
}

// add registers a request in flight, by its context, until remove.
func (c *callers) add(ctx context.Context) (remove func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ctxs == nil {
		c.ctxs = map[uint64]context.Context{}
	}
	c.seq++
	id := c.seq
	c.ctxs[id] = ctx
	return func() {
		c.mu.Lock()
		delete(c.ctxs, id)
		c.mu.Unlock()
	}
}

// Callers are the contexts of the requests in flight to the server now
// (a tools/call, or a request Request forwards), each ended when its
// request is: a request the server makes meanwhile (Hooks.Relay) may be
// on behalf of one of them, and go to the host that sent it, until it
// ends.
func (u *Client) Callers() []context.Context {
	u.callers.mu.Lock()
	defer u.callers.mu.Unlock()
	out := make([]context.Context, 0, len(u.callers.ctxs))
	for _, ctx := range u.callers.ctxs {
		out = append(out, ctx)
	}
	return out
}
