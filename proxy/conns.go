package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
)

// hostConn is one host's connection as mcp-guard's handlers see it,
// whatever carries it: the stdio host's (stdiosession.go), an HTTP
// session's or a 2026-07-28 HTTP request's (httpsession.go). A request is
// served under its connection (withConn); what mcp-guard sends a host
// unasked goes through it.
type hostConn interface {
	// connID names the connection among the connected ones: "stdio", an
	// HTTP session's id, a listen's stream; "" for a request's own
	// connection, which nothing else can reach.
	connID() string
	// peer is what the connection keeps of its host (hostpeer.go).
	peer() *hostPeer
	// queue sends the host one notification unasked, params (one line of
	// JSON, or nil) as they are, on the stream the host reads so. It
	// fails, and the notification is dropped, if that stream is full.
	queue(method string, params json.RawMessage) error
}

// filteredConn is a connection that takes only the notifications a
// subscriptions/listen opted in to (2026-07-28), while it is active: a
// listen's own (httpsession.go).
type filteredConn interface {
	// setFilter records what the listen opted in to.
	setFilter(f mcp.SubscriptionFilter)
	notifyFilter() (f mcp.SubscriptionFilter, active bool)
}

// listensConn is a connection that carries each of its host's listens as
// a connection of its own, on its one stream (the stdio host's).
type listensConn interface {
	// listenConn is the connection of the listen whose request id is id.
	listenConn(id json.RawMessage) hostConn
}

// withSubscriptionID is a listen's notification params: params with the
// listen's request id in its _meta (2026-07-28).
func withSubscriptionID(params, listenID json.RawMessage) json.RawMessage {
	if len(params) == 0 {
		params = json.RawMessage(`{}`)
	}
	meta := append(append([]byte(`{"`+mcp.MetaKeySubscriptionID+`":`), listenID...), '}')
	if withID, ok := setMember(params, "_meta", meta); ok {
		return withID
	}
	return params
}

// connKey is the context key of the connection a request is served on.
type connKey struct{}

// withConn is ctx serving a request of c.
func withConn(ctx context.Context, c hostConn) context.Context {
	return context.WithValue(ctx, connKey{}, c)
}

// connOf is the connection ctx's request is served on; nil for none.
func connOf(ctx context.Context) hostConn {
	c, _ := ctx.Value(connKey{}).(hostConn)
	return c
}

// errNotInitialized is why a notification does not go to a host that has
// not finished its initialize.
var errNotInitialized = errors.New("the host session is not initialized")

// hostConns are the hosts connected now, by connID. Its zero value is
// ready.
type hostConns struct {
	mu   sync.Mutex
	byID map[string]hostConn
}

// add makes c reachable by its id and by broadcasts.
func (h *hostConns) add(c hostConn) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.byID == nil {
		h.byID = map[string]hostConn{}
	}
	if _, dup := h.byID[c.connID()]; dup {
		return fmt.Errorf("a host connection %q is connected already", c.connID())
	}
	h.byID[c.connID()] = c
	return nil
}

// remove takes c out; it reports false if it was not there.
func (h *hostConns) remove(c hostConn) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.byID[c.connID()] != c {
		return false
	}
	delete(h.byID, c.connID())
	return true
}

// send sends the connection id one notification: it fails if there is no
// such connection, it is not initialized, or its stream is full.
func (h *hostConns) send(id, method string, params json.RawMessage) error {
	h.mu.Lock()
	c := h.byID[id]
	h.mu.Unlock()
	if c == nil {
		return fmt.Errorf("no host connection %q", id)
	}
	if !c.peer().isInitialized() {
		return errNotInitialized
	}
	return c.queue(method, params)
}

// broadcast sends every initialized host one notification, except a
// connection whose listen did not opt in to its kind. It reports the
// connections that missed it, their streams full.
func (h *hostConns) broadcast(method string, params json.RawMessage) (missed []string) {
	h.mu.Lock()
	all := make([]hostConn, 0, len(h.byID))
	for _, c := range h.byID {
		all = append(all, c)
	}
	h.mu.Unlock()
	for _, c := range all {
		if !c.peer().isInitialized() || !optedIn(c, method) {
			continue
		}
		if c.queue(method, params) != nil {
			missed = append(missed, c.connID())
		}
	}
	return missed
}

// optedIn reports whether c takes a notification of method: any, unless
// its host is a 2026-07-28 one, which takes only what a listen of its
// opted in to: a listen's connection the list changes it named
// (resources/updated goes to each subscriber: hostConns.send), any other
// nothing.
func optedIn(c hostConn, method string) bool {
	fc, ok := c.(filteredConn)
	if !ok {
		return !c.peer().stateless.Load()
	}
	f, active := fc.notifyFilter()
	if !active {
		return true
	}
	switch mcp.MCPMethod(method) {
	case mcp.MethodNotificationToolsListChanged:
		return f.ToolsListChanged
	case mcp.MethodNotificationPromptsListChanged:
		return f.PromptsListChanged
	case mcp.MethodNotificationResourcesListChanged:
		return f.ResourcesListChanged
	}
	return false
}

// connect makes c one of the connected hosts: it is sent what every host
// gets, and its subscriptions are its own.
func (p *Proxy) connect(c hostConn) error {
	if err := p.conns.add(c); err != nil {
		return fmt.Errorf("proxy: host connection: %w", err)
	}
	return nil
}

// disconnect ends c's connection: it is sent nothing more, and the
// subscriptions it held end (upstream too, the last subscriber's).
func (p *Proxy) disconnect(c hostConn) {
	if p.conns.remove(c) {
		p.dropSubscriptions(c.connID())
	}
}

// broadcast sends every connected host one notification (hostConns.broadcast).
func (p *Proxy) broadcast(method string, params json.RawMessage) {
	for _, id := range p.conns.broadcast(method, params) {
		p.log.Debug("notification not delivered: the host's stream is full", "method", method, "session", id)
	}
}
