package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// stdioSession is the stdio host's session as mcp-go's server sees it:
// server.ClientSession and the extensions mcp-guard's handlers use
// (logging, client info), and what mcp-guard asks the host (hostpeer.go). Each
// ServeStdio has its own: mcp-go's StdioServer keeps one session for the
// whole process.
type stdioSession struct {
	hostPeer
	h     *stdioHost
	notes chan mcp.JSONRPCNotification // mcp-go's notifications, written by stdioHost.notes

	subMu sync.Mutex
	subs  map[string]bool // host URIs subscribed to in a subscriptions/listen
}

var (
	_ server.SessionWithLogging    = (*stdioSession)(nil)
	_ server.SessionWithClientInfo = (*stdioSession)(nil)
	_ hostAsker                    = (*stdioSession)(nil)
	// A 2026-07-28 host subscribes in its subscriptions/listen.
	_ server.SessionWithResourceSubscriptionsErr = (*stdioSession)(nil)
)

func newStdioSession(h *stdioHost) *stdioSession {
	return &stdioSession{h: h, notes: make(chan mcp.JSONRPCNotification, 100), subs: map[string]bool{}}
}

func (s *stdioSession) SessionID() string { return "stdio" }

func (s *stdioSession) NotificationChannel() chan<- mcp.JSONRPCNotification { return s.notes }

// askHost asks the host a request of method with params, as they are.
func (s *stdioSession) askHost(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, *mcp.JSONRPCErrorDetails, error) {
	return s.ask(ctx, method, params, s.send, func(id int64) { s.h.p.withdrawn(ctx, id) })
}

// sendAll writes a notification every host gets, once the host is
// initialized.
func (s *stdioSession) sendAll(line []byte) {
	if !s.Initialized() {
		return
	}
	if _, err := s.h.out.Write(append(line, '\n')); err != nil {
		s.h.p.log.Debug("notification not delivered to host", "err", err)
	}
}

// send writes a request to the host's stream.
func (s *stdioSession) send(_ context.Context, _ string, line []byte) error {
	_, err := s.h.out.Write(append(line, '\n'))
	return err
}

// SubscribeToResourceErr is a host's subscription to a resource: in a
// 2026-07-28 host's subscriptions/listen (listen.go), and after a
// resources/subscribe, which subscriptions.go has decided already. It is
// decided and forwarded exactly as a resources/subscribe is; refused, the
// host's listen is refused with why.
func (s *stdioSession) SubscribeToResourceErr(uri string) error {
	ctx := s.h.session.Load()
	if ctx == nil {
		return errors.New("mcp-guard: the session is not set up")
	}
	if !s.h.p.subscribed(s.SessionID(), uri) {
		if err := s.h.p.subscribe(*ctx, subParams(uri)); err != nil {
			return err
		}
	}
	s.subMu.Lock()
	s.subs[uri] = true
	s.subMu.Unlock()
	return nil
}

// SubscribeToResource is SubscribeToResourceErr for a caller that cannot
// be refused; mcp-guard calls SubscribeToResourceErr.
func (s *stdioSession) SubscribeToResource(uri string) { _ = s.SubscribeToResourceErr(uri) }

// UnsubscribeFromResource ends the host's subscription (its listen ended,
// or it unsubscribed).
func (s *stdioSession) UnsubscribeFromResource(uri string) {
	s.subMu.Lock()
	delete(s.subs, uri)
	s.subMu.Unlock()
	if ctx := s.h.session.Load(); ctx != nil {
		_ = s.h.p.unsubscribe(*ctx, subParams(uri))
	}
}

// SubscribedResources are the host URIs the session is subscribed to.
func (s *stdioSession) SubscribedResources() []string {
	s.subMu.Lock()
	defer s.subMu.Unlock()
	out := make([]string, 0, len(s.subs))
	for u := range s.subs {
		out = append(out, u)
	}
	return out
}

// IsSubscribedToResource reports whether the session is subscribed to uri.
func (s *stdioSession) IsSubscribedToResource(uri string) bool {
	s.subMu.Lock()
	defer s.subMu.Unlock()
	return s.subs[uri]
}
