package proxy

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// httpEndpoint is mcp-guard's streamable HTTP transport for hosts: each
// POST is read once, here, and served in its host session (httppost.go);
// a GET is a session's stream of what mcp-guard sends unasked; a DELETE
// ends a session. Each message is answered as the stdio host's are
// (Proxy.answer).
type httpEndpoint struct {
	p        *Proxy
	ttl      time.Duration
	sessions httpSessions
}

func (e *httpEndpoint) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// T1: whatever this request's response carries leaves through here.
	w = redactWriter{ResponseWriter: w, p: e.p, host: "http " + r.Header.Get(mcp.HeaderSessionID)}
	switch r.Method {
	case http.MethodPost:
		e.post(w, r)
	case http.MethodGet:
		e.get(w, r)
	case http.MethodDelete:
		e.delete(w, r)
	case http.MethodHead:
		w.WriteHeader(http.StatusOK)
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		http.Error(w, "mcp-guard: method not allowed", http.StatusMethodNotAllowed)
	}
}

// refuseHTTP answers a request with an HTTP error saying why, and logs it.
func (e *httpEndpoint) refuseHTTP(w http.ResponseWriter, r *http.Request, code int, why string) {
	e.p.log.Warn("host request refused", "method", r.Method, "status", code, "why", why, "remote", r.RemoteAddr)
	http.Error(w, "mcp-guard: "+why, code)
}

// versionRefused answers, and reports, a 2025 host's request whose
// Mcp-Protocol-Version names no revision mcp-guard speaks. (A 2025-03-26
// host sends none.)
func (e *httpEndpoint) versionRefused(w http.ResponseWriter, r *http.Request) bool {
	v := r.Header.Get(mcp.HeaderProtocolVersion)
	if v == "" || mcp.IsValidProtocolVersion(v) {
		return false
	}
	e.refuseHTTP(w, r, http.StatusBadRequest, fmt.Sprintf("unsupported protocol version %q", v))
	return true
}

// modernRefused answers a GET or DELETE of a 2026-07-28 host, which that
// revision no longer has.
func (e *httpEndpoint) modernRefused(w http.ResponseWriter, r *http.Request) bool {
	if !mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion)) {
		return false
	}
	w.Header().Set("Allow", http.MethodPost) // RFC 9110: a 405 says what is allowed
	e.refuseHTTP(w, r, http.StatusMethodNotAllowed, r.Method+" is not part of protocol "+mcp.ProtocolVersion20260728+": the server's messages come on subscriptions/listen")
	return true
}

// session is the session a request names, or nil once it has answered
// why there is none: no id (400), or one that never was or has ended
// (404, after which a host starts a new session).
func (e *httpEndpoint) session(w http.ResponseWriter, r *http.Request) *httpSession {
	sid := r.Header.Get(mcp.HeaderSessionID)
	if sid == "" {
		e.refuseHTTP(w, r, http.StatusBadRequest, "this request belongs to a session: send the Mcp-Session-Id header that initialize returned")
		return nil
	}
	s := e.sessions.get(sid)
	if s != nil && s.idleFor(e.ttl) {
		e.endSession(r.Context(), s, "idle")
		s = nil
	}
	if s == nil {
		e.refuseHTTP(w, r, http.StatusNotFound, "no such session (it ended, or was never started): initialize a new one")
		return nil
	}
	return s
}

// startSession makes s a session hosts can name: it is sent what every
// host gets, and it has its own limits and ledger session.
func (e *httpEndpoint) startSession(ctx context.Context, s *httpSession, remote string) error {
	if err := e.p.connect(s); err != nil {
		return err
	}
	e.p.addHost(ctx, s.id, remote)
	e.sessions.add(s)
	return nil
}

// endSession ends s (why: "deleted", "idle", "stopped"): its streams
// close, its subscriptions and ledger session end.
func (e *httpEndpoint) endSession(ctx context.Context, s *httpSession, why string) {
	if !e.sessions.remove(s) {
		return
	}
	s.end.Do(func() { close(s.done) })
	e.p.disconnect(s)
	e.p.dropHost(s.id)
	e.p.log.Debug("host session ended", "session", s.id, "why", why)
}

// sweep ends the sessions idle past the TTL until ctx is done.
func (e *httpEndpoint) sweep(ctx context.Context) {
	t := time.NewTicker(max(e.ttl/2, time.Second))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			for _, s := range e.sessions.idle(e.ttl) {
				e.endSession(ctx, s, "idle")
			}
		}
	}
}

// stop ends every session: the endpoint is shutting down.
func (e *httpEndpoint) stop(ctx context.Context) {
	for _, s := range e.sessions.all() {
		e.endSession(ctx, s, "stopped")
	}
}

// delete ends the session the request names.
func (e *httpEndpoint) delete(w http.ResponseWriter, r *http.Request) {
	if e.modernRefused(w, r) || e.versionRefused(w, r) {
		return
	}
	s := e.session(w, r)
	if s == nil {
		return
	}
	e.endSession(r.Context(), s, "deleted")
	w.WriteHeader(http.StatusOK)
}

// get streams to the host what its session is sent unasked (notifications,
// the servers' sampling and elicitation requests) until the
// host goes, the session ends or the endpoint stops.
func (e *httpEndpoint) get(w http.ResponseWriter, r *http.Request) {
	if e.modernRefused(w, r) || e.versionRefused(w, r) {
		return
	}
	s := e.session(w, r)
	if s == nil {
		return
	}
	f, ok := w.(http.Flusher)
	if !ok {
		e.refuseHTTP(w, r, http.StatusMethodNotAllowed, "this connection cannot stream")
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	w.WriteHeader(http.StatusOK)
	f.Flush()
	for {
		var msg []byte
		select {
		case msg = <-s.lines:
		case msg = <-s.asks:
		case <-r.Context().Done():
			return
		case <-s.done:
			return
		}
		if _, err := fmt.Fprintf(w, "event: message\ndata: %s\n\n", msg); err != nil {
			e.p.log.Debug("host GET stream ended", "session", s.id, "err", err)
			return
		}
		f.Flush()
		s.touch()
	}
}
