package proxy

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/mark3labs/mcp-go/mcp"
)

// stdioSession is the stdio host's connection (hostConn): what it keeps
// of its host and what mcp-guard asks it (hostpeer.go). It subscribes to
// resources itself (subscriberConn). Each ServeStdio has its own.
type stdioSession struct {
	hostPeer
	h *stdioHost
}

var (
	_ hostConn       = (*stdioSession)(nil)
	_ hostAsker      = (*stdioSession)(nil)
	_ subscriberConn = (*stdioSession)(nil)
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

// subscribeTo is a host's subscription to a resource: after a
// resources/subscribe, which subscriptions.go has decided already, and in
// a 2026-07-28 host's subscriptions/listen (listen.go). It is decided and
// forwarded exactly as a resources/subscribe is; refused, the host's
// listen is refused with why.
func (s *stdioSession) subscribeTo(uri string) error {
	ctx := s.h.session.Load()
	if ctx == nil {
		return errors.New("mcp-guard: the session is not set up")
	}
	if !s.h.p.subscribed(s.connID(), uri) {
		if err := s.h.p.subscribe(*ctx, subParams(uri)); err != nil {
			return err
		}
	}
	return nil
}

// unsubscribeFrom ends the host's subscription (its listen ended, or it
// unsubscribed), and upstream the last subscriber's.
func (s *stdioSession) unsubscribeFrom(uri string) {
	if ctx := s.h.session.Load(); ctx != nil {
		_ = s.h.p.unsubscribe(*ctx, subParams(uri))
	}
}
