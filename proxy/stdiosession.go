package proxy

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
)

// stdioSession is the stdio host's connection (hostConn): what it keeps
// of its host and what mcp-guard asks it (hostpeer.go). Each ServeStdio
// has its own.
type stdioSession struct {
	hostPeer
	h *stdioHost
}

var (
	_ hostConn    = (*stdioSession)(nil)
	_ hostAsker   = (*stdioSession)(nil)
	_ listensConn = (*stdioSession)(nil)
)

func newStdioSession(h *stdioHost) *stdioSession {
	return &stdioSession{h: h}
}

func (s *stdioSession) connID() string { return "stdio" }

// queue writes a notification on the host's stream.
func (s *stdioSession) queue(method string, params json.RawMessage) error {
	_, err := s.h.out.Write(append(notificationLine(method, params), '\n'))
	return err
}

// askHost asks the host a request of method with params, as they are.
func (s *stdioSession) askHost(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, *mcp.JSONRPCErrorDetails, error) {
	return s.ask(ctx, method, params, s.send, func(id int64) { s.h.p.withdrawn(ctx, id) })
}

// send writes a request to the host's stream.
func (s *stdioSession) send(_ context.Context, _ string, line []byte) error {
	_, err := s.h.out.Write(append(line, '\n'))
	return err
}

// listenConn is the connection of the host's listen id: its notifications
// go on the host's one stream, each naming the listen.
func (s *stdioSession) listenConn(id json.RawMessage) hostConn {
	return &stdioListen{s: s, id: "stdio listen " + string(id), listenID: id}
}

// stdioListen is a 2026-07-28 stdio host's subscriptions/listen, as a
// connection (filteredConn): it takes what the listen opted in to.
type stdioListen struct {
	s        *stdioSession
	id       string
	listenID json.RawMessage

	mu     sync.Mutex
	filter mcp.SubscriptionFilter
}

var _ filteredConn = (*stdioListen)(nil)

func (l *stdioListen) connID() string  { return l.id }
func (l *stdioListen) peer() *hostPeer { return &l.s.hostPeer }

// queue writes a notification, naming the listen, on the host's stream.
func (l *stdioListen) queue(method string, params json.RawMessage) error {
	return l.s.queue(method, withSubscriptionID(params, l.listenID))
}

func (l *stdioListen) setFilter(f mcp.SubscriptionFilter) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.filter = f
}

func (l *stdioListen) notifyFilter() (mcp.SubscriptionFilter, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.filter, true
}
