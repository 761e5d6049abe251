package proxy

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// httpSession is one HTTP host session as mcp-go's server sees it. A
// 2025 host's session starts with its initialize and lasts until it is
// deleted, sits idle past the TTL, or the endpoint stops. A 2026-07-28
// host's request is served by a session of its own that lasts as long as
// the request (ephemeral).
type httpSession struct {
	hostPeer
	e         *httpEndpoint
	id        string // "" for an ephemeral session that listens to nothing
	ephemeral bool

	notes chan mcp.JSONRPCNotification // mcp-go's notifications: to the GET stream or a POST's
	lines chan []byte                  // what every host gets (sendAll): to the GET stream or a POST's
	asks  chan []byte                  // requests for the host that wait for its GET stream
	done  chan struct{}                // closed when the session ends
	end   sync.Once
	seen  atomic.Int64 // when a request of it, or a GET event, last went, unix nanoseconds

	subMu     sync.Mutex
	listening bool // a 2026-07-28 subscriptions/listen is served on it
	filter    mcp.SubscriptionFilter
}

var (
	_ server.SessionWithLogging            = (*httpSession)(nil)
	_ server.SessionWithClientInfo         = (*httpSession)(nil)
	_ hostAsker                            = (*httpSession)(nil)
	_ server.SessionWithSubscriptionFilter = (*httpSession)(nil)
)

func newHTTPSession(e *httpEndpoint, id string, ephemeral bool) *httpSession {
	s := &httpSession{
		e: e, id: id, ephemeral: ephemeral,
		notes: make(chan mcp.JSONRPCNotification, 100),
		lines: make(chan []byte, 100),
		asks:  make(chan []byte, 10),
		done:  make(chan struct{}),
	}
	// Its initialize has been answered when the host can name it, and a
	// stateless request carries what initialize would have.
	s.Initialize()
	s.touch()
	return s
}

func (s *httpSession) SessionID() string { return s.id }

func (s *httpSession) NotificationChannel() chan<- mcp.JSONRPCNotification { return s.notes }

func (s *httpSession) touch() { s.seen.Store(time.Now().UnixNano()) }

// askHost asks the host a request of method with params, as they are: an
// elicitation on the stream of the request that caused it, anything else
// on the session's GET stream (send).
func (s *httpSession) askHost(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, *mcp.JSONRPCErrorDetails, error) {
	return s.ask(ctx, method, params, s.send, func(id int64) { s.e.p.withdrawn(ctx, id) })
}

// sendAll queues a notification every host gets for the session's
// streams; it is dropped if the queue is full.
func (s *httpSession) sendAll(line []byte) {
	select {
	case s.lines <- line:
	default:
		s.e.p.log.Debug("notification not delivered: the host's stream is full", "session", s.id)
	}
}

// postStreamKey is the context key of the response of the POST a request
// is served on: requests for the host that it causes go on that stream.
type postStreamKey struct{}

// send writes a request for the host: an elicitation on the stream of
// the POST that caused it while that is open; anything else, or when it
// is not, queued for the session's GET stream.
func (s *httpSession) send(ctx context.Context, method string, line []byte) error {
	if method == string(mcp.MethodElicitationCreate) {
		if sw, ok := ctx.Value(postStreamKey{}).(*streamWriter); ok && sw.event(line) == nil {
			return nil
		}
	}
	select {
	case s.asks <- line:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	default:
		return errors.New("the host's GET stream has too many requests waiting")
	}
}

// SetSubscriptionFilter records what a subscriptions/listen asked for.
func (s *httpSession) SetSubscriptionFilter(f mcp.SubscriptionFilter) {
	s.subMu.Lock()
	defer s.subMu.Unlock()
	s.filter = f
}

// SubscriptionFilter filters a session while it serves a listen, so that
// it gets nothing before the listen's filter is recorded or after.
func (s *httpSession) SubscriptionFilter() (mcp.SubscriptionFilter, bool) {
	s.subMu.Lock()
	defer s.subMu.Unlock()
	return s.filter, s.listening
}

// httpSessions are an endpoint's 2025 host sessions, by id.
type httpSessions struct {
	mu   sync.Mutex
	byID map[string]*httpSession
}

// newSessionID is a fresh session id: 128 random bits.
func newSessionID() string { return "mcp-session-" + rand.Text() }

func (t *httpSessions) add(s *httpSession) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.byID == nil {
		t.byID = map[string]*httpSession{}
	}
	t.byID[s.id] = s
}

func (t *httpSessions) get(id string) *httpSession {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.byID[id]
}

// remove takes s out of the table; it reports false if it was not there.
func (t *httpSessions) remove(s *httpSession) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.byID[s.id] != s {
		return false
	}
	delete(t.byID, s.id)
	return true
}

// idle are the sessions with no request and no GET event for ttl.
func (t *httpSessions) idle(ttl time.Duration) []*httpSession {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []*httpSession
	for _, s := range t.byID {
		if s.idleFor(ttl) {
			out = append(out, s)
		}
	}
	return out
}

func (t *httpSessions) all() []*httpSession {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make([]*httpSession, 0, len(t.byID))
	for _, s := range t.byID {
		out = append(out, s)
	}
	return out
}

// idleFor reports whether s has had no request and no GET event for ttl.
// An open GET stream alone does not keep it: a host gone without closing
// its connection would hold it forever.
func (s *httpSession) idleFor(ttl time.Duration) bool {
	return time.Now().UnixNano()-s.seen.Load() > int64(ttl)
}
