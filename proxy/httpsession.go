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
)

// httpSession is one HTTP host's connection (hostConn). A 2025 host's
// session starts with its initialize and lasts until it is deleted, sits
// idle past the TTL, or the endpoint stops. A 2026-07-28 host's request is
// served by a connection of its own that lasts as long as the request
// (ephemeral); a subscriptions/listen's is connected while it lasts, and
// takes what its listen opted in to.
type httpSession struct {
	hostPeer
	e         *httpEndpoint
	id        string // "" for an ephemeral session that listens to nothing
	ephemeral bool

	lines chan []byte   // notifications for the host (queue): to the GET stream or a POST's
	asks  chan []byte   // requests for the host that wait for its GET stream
	done  chan struct{} // closed when the session ends
	end   sync.Once
	seen  atomic.Int64 // when a request of it, or a GET event, last went, unix nanoseconds

	// listenID is the id of the subscriptions/listen the connection
	// serves (2026-07-28), which each notification on it names; nil for
	// any other.
	listenID json.RawMessage

	subMu  sync.Mutex
	filter mcp.SubscriptionFilter // what the listen opted in to, once it is decided
}

var (
	_ hostConn     = (*httpSession)(nil)
	_ hostAsker    = (*httpSession)(nil)
	_ filteredConn = (*httpSession)(nil)
)

func newHTTPSession(e *httpEndpoint, id string, ephemeral bool) *httpSession {
	s := &httpSession{
		e: e, id: id, ephemeral: ephemeral,
		lines: make(chan []byte, 100),
		asks:  make(chan []byte, 10),
		done:  make(chan struct{}),
	}
	// Its initialize has been answered when the host can name it, and a
	// stateless request carries what initialize would have.
	s.markInitialized()
	s.touch()
	return s
}

func (s *httpSession) connID() string { return s.id }

func (s *httpSession) touch() { s.seen.Store(time.Now().UnixNano()) }

// askHost asks the host a request of method with params, as they are: an
// elicitation on the stream of the request that caused it, anything else
// on the session's GET stream (send).
func (s *httpSession) askHost(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, *mcp.JSONRPCErrorDetails, error) {
	return s.ask(ctx, method, params, s.send, func(id int64) { s.e.p.withdrawn(ctx, id) })
}

// errStreamFull is why a notification for an HTTP host is dropped.
var errStreamFull = errors.New("the host's stream is full")

// queue queues a notification for the session's streams; it is dropped if
// the queue is full. On a listen's stream it names the listen.
func (s *httpSession) queue(method string, params json.RawMessage) error {
	if s.listenID != nil {
		params = withSubscriptionID(params, s.listenID)
	}
	select {
	case s.lines <- notificationLine(method, params):
		return nil
	default:
		return errStreamFull
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

// setFilter records what the listen served on s opted in to.
func (s *httpSession) setFilter(f mcp.SubscriptionFilter) {
	s.subMu.Lock()
	defer s.subMu.Unlock()
	s.filter = f
}

// notifyFilter filters a listen's connection, so that it gets nothing
// before the listen's filter is recorded or after.
func (s *httpSession) notifyFilter() (mcp.SubscriptionFilter, bool) {
	s.subMu.Lock()
	defer s.subMu.Unlock()
	return s.filter, s.listenID != nil
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
