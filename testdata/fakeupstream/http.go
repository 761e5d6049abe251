package fakeupstream

// HTTP mode (fakeup --http ADDR): the same script served over MCP's
// streamable HTTP transport, or over the legacy HTTP+SSE transport (sse.go),
// with HTTP-level misbehaviour from the script's "http" object. The package
// documentation describes the rules; handle() and the behaviours are shared
// with stdio mode through the sink interface.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

const sessionHeader = "Mcp-Session-Id"

// httpScript is the script's "http" object (HTTP mode only).
type httpScript struct {
	Path               string         `json:"path"`
	Mode               string         `json:"mode"`
	ResponseMode       string         `json:"responseMode"`
	NoSession          bool           `json:"noSession"`
	NoGetStream        bool           `json:"noGetStream"`
	PrimeEvent         bool           `json:"primeEvent"`
	Endpoint           string         `json:"endpoint"`
	RequireBearer      string         `json:"requireBearer"`
	Redirect           string         `json:"redirect"`
	RedirectStatus     int            `json:"redirectStatus"`
	StatusFor          map[string]int `json:"statusFor"`
	EndStreamFor       []string       `json:"endStreamFor"`
	ExpireSessionAfter int            `json:"expireSessionAfter"`
	SlowHeadersMs      int            `json:"slowHeadersMs"`
	EndGetStreams      *int           `json:"endGetStreams"`
}

// normalize checks h and fills in defaults.
func (h *httpScript) normalize() error {
	if h.Path == "" {
		h.Path = "/mcp"
	} else if !strings.HasPrefix(h.Path, "/") {
		return fmt.Errorf("path %q does not start with /", h.Path)
	}
	switch h.Mode {
	case "":
		h.Mode = "streamable"
	case "streamable", "sse":
	default:
		return fmt.Errorf("unknown mode %q", h.Mode)
	}
	switch h.ResponseMode {
	case "":
		h.ResponseMode = "auto"
	case "auto", "json", "sse":
	default:
		return fmt.Errorf("unknown responseMode %q", h.ResponseMode)
	}
	if h.Endpoint == "" {
		h.Endpoint = "/message?sessionId={session}"
	}
	if h.RedirectStatus == 0 {
		h.RedirectStatus = http.StatusTemporaryRedirect
	} else if h.RedirectStatus < 300 || h.RedirectStatus > 399 {
		return fmt.Errorf("redirectStatus %d is not 3xx", h.RedirectStatus)
	}
	for k, code := range h.StatusFor {
		if code < 200 || code > 599 {
			return fmt.Errorf("statusFor %q: status %d out of 200..599", k, code)
		}
	}
	if h.ExpireSessionAfter < 0 || h.SlowHeadersMs < 0 {
		return fmt.Errorf("negative expireSessionAfter or slowHeadersMs")
	}
	return nil
}

// httpServer is the HTTP front of a server.
type httpServer struct {
	s    *server
	cfg  *httpScript
	done chan struct{} // closed at shutdown

	mu       sync.Mutex
	closing  bool
	active   sync.WaitGroup // running handlers
	sessions map[string]*session
	implicit *session // the only session when cfg.NoSession
	eventID  int64    // last priming event id
}

// session is a streamable HTTP session (Mcp-Session-Id) or a legacy SSE
// connection (sessionId query parameter).
type session struct {
	id   string
	out  *queue        // standalone GET stream (streamable) or the SSE stream (legacy); nil: messages are dropped
	gone chan struct{} // closed when the session ends (DELETE, expiry, legacy stream gone)

	// guarded by httpServer.mu
	requests  int  // HTTP requests counted in the session
	streaming bool // a GET stream is being served
}

func (ss *session) post(msg []byte) {
	if ss.out != nil {
		ss.out.push(item{msg: msg})
	}
}

// item is a message bound for an HTTP response; final marks the response
// to the request being answered.
type item struct {
	msg   []byte
	final bool
}

// queue is an unbounded FIFO of items written by behaviours and drained by
// one HTTP handler; push never blocks, and is a no-op once closed.
type queue struct {
	wake chan struct{} // capacity 1: signalled after push and close

	mu     sync.Mutex
	items  []item
	closed bool
}

func newQueue() *queue { return &queue{wake: make(chan struct{}, 1)} }

func (q *queue) push(it item) {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return
	}
	q.items = append(q.items, it)
	q.mu.Unlock()
	q.signal()
}

func (q *queue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.signal()
}

func (q *queue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// take removes and returns the pending items, and whether q is closed.
func (q *queue) take() ([]item, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	items := q.items
	q.items = nil
	return items, q.closed
}

// requestSink is the sink of one POSTed request in streamable mode. Its
// response, and when stream is set the other messages sent while handling
// it, go to the request's own HTTP response; the rest to the session's
// standalone stream.
type requestSink struct {
	sess   *session
	q      *queue
	stream bool
}

func (x *requestSink) send(msg []byte) {
	if x.stream {
		x.q.push(item{msg: msg})
	} else {
		x.sess.post(msg)
	}
}
func (x *requestSink) reply(msg []byte)  { x.q.push(item{msg: msg, final: true}) }
func (x *requestSink) notify(msg []byte) { x.sess.post(msg) }
func (x *requestSink) end()              { x.q.close() }

// sessionSink sends everything to the session's stream: used for POSTed
// notifications and responses in streamable mode, and for every message in
// legacy mode.
type sessionSink struct{ sess *session }

func (x sessionSink) send(msg []byte)   { x.sess.post(msg) }
func (x sessionSink) reply(msg []byte)  { x.sess.post(msg) }
func (x sessionSink) notify(msg []byte) { x.sess.post(msg) }
func (x sessionSink) end()              {}

// stderrWriter lets net/http log through writeStderr.
type stderrWriter struct{ s *server }

func (w stderrWriter) Write(p []byte) (int, error) {
	w.s.writeStderr(p)
	return len(p), nil
}

// serveHTTP is HTTP mode: it serves on ln, or a listener on addr, until
// ctx is done (or, as a program, SIGINT or SIGTERM arrives), and returns
// the exit status.
func (s *server) serveHTTP(ctx context.Context, addr, addrFile string, ln net.Listener) int {
	if ln == nil {
		var stop context.CancelFunc
		ctx, stop = signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
		defer stop()
		var err error
		if ln, err = net.Listen("tcp", addr); err != nil {
			s.writeStderr(fmt.Appendf(nil, "fakeup: %v\n", err))
			return 1
		}
	}
	h := newHTTPServer(s)
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 30 * time.Second,
		ErrorLog:          log.New(stderrWriter{s}, "fakeup: http: ", 0),
	}
	if addrFile != "" {
		if err := writeFileAtomic(addrFile, []byte(ln.Addr().String())); err != nil {
			ln.Close()
			s.writeStderr(fmt.Appendf(nil, "fakeup: %v\n", err))
			return 1
		}
	}
	s.writeStderr(fmt.Appendf(nil, "fakeup: listening on http://%s%s\n", ln.Addr(), h.cfg.Path))
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	code := 0
	select {
	case <-ctx.Done():
	case err := <-served:
		s.writeStderr(fmt.Appendf(nil, "fakeup: serve: %v\n", err))
		code = 1
	}
	h.shutdown(srv)
	return code
}

// writeFileAtomic writes data to a temporary file next to path and renames
// it to path.
func writeFileAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), ".fakeup-addr-*")
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), path)
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return err
}

func newHTTPServer(s *server) *httpServer {
	h := &httpServer{s: s, cfg: s.sc.HTTP, done: make(chan struct{}), sessions: map[string]*session{}}
	h.implicit = &session{gone: make(chan struct{})}
	if !h.cfg.NoGetStream {
		h.implicit.out = newQueue()
	}
	return h
}

// shutdown closes every connection and waits for the handlers to return.
func (h *httpServer) shutdown(srv *http.Server) {
	h.mu.Lock()
	h.closing = true
	h.mu.Unlock()
	close(h.done)
	srv.Close()
	h.active.Wait()
}

// httpRecord is one --record line in HTTP mode.
type httpRecord struct {
	Method  string              `json:"method"`
	Host    string              `json:"host"`
	Path    string              `json:"path"`
	Query   string              `json:"query"`
	Headers map[string][]string `json:"headers"`
	Body    string              `json:"body"`
}

func (s *server) recordHTTP(r *http.Request, body []byte) {
	if s.record == nil {
		return
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.Encode(httpRecord{ //nolint:errcheck // strings and string maps always encode
		Method: r.Method, Host: r.Host, Path: r.URL.Path, Query: r.URL.RawQuery,
		Headers: r.Header, Body: string(body),
	})
	s.recMu.Lock()
	defer s.recMu.Unlock()
	s.record.Write(buf.Bytes()) //nolint:errcheck // best effort
}

// rpcInfo is what the HTTP layer needs to know about a POSTed message.
type rpcInfo struct {
	method  string // "" for a response
	request bool   // has "method" and "id": it is answered
	tool    string // params.name of a tools/call
}

// parseRPC reports whether body is a JSON object, and what it holds.
func parseRPC(body []byte) (rpcInfo, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil || m == nil {
		return rpcInfo{}, false
	}
	var info rpcInfo
	_, hasID := m["id"]
	methodRaw, hasMethod := m["method"]
	info.request = hasID && hasMethod
	json.Unmarshal(methodRaw, &info.method) //nolint:errcheck // not a string: ""
	if info.method == "tools/call" {
		info.tool, _ = stringField(m["params"], "name")
	}
	return info, true
}

func parseError(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	io.WriteString(w, `{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}`) //nolint:errcheck
}

func bearerOK(r *http.Request, token string) bool {
	scheme, cred, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	return ok && strings.EqualFold(scheme, "Bearer") && cred == token
}

// pause waits d, or returns false early if the request or server ends.
func (h *httpServer) pause(r *http.Request, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
	case <-h.done:
	}
	return false
}

func (h *httpServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	if h.closing {
		h.mu.Unlock()
		panic(http.ErrAbortHandler)
	}
	h.active.Add(1)
	h.mu.Unlock()
	defer h.active.Done()

	body, err := io.ReadAll(r.Body)
	if err != nil {
		return // client gone
	}
	h.s.recordHTTP(r, body)

	if ms := h.cfg.SlowHeadersMs; ms > 0 && !h.pause(r, time.Duration(ms)*time.Millisecond) {
		return
	}
	if h.cfg.Redirect != "" {
		w.Header().Set("Location", h.cfg.Redirect)
		w.WriteHeader(h.cfg.RedirectStatus)
		return
	}
	if tok := h.cfg.RequireBearer; tok != "" && !bearerOK(r, tok) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="fakeup"`)
		http.Error(w, "fakeup: missing or wrong bearer token", http.StatusUnauthorized)
		return
	}
	var info rpcInfo
	isRPC := false
	if r.Method == http.MethodPost {
		info, isRPC = parseRPC(body)
	}
	code, ok := h.cfg.StatusFor[info.method]
	if !ok || info.method == "" {
		code, ok = h.cfg.StatusFor[r.Method]
	}
	if ok {
		http.Error(w, fmt.Sprintf("fakeup: scripted status %d", code), code)
		return
	}
	body = bytes.TrimSpace(body)
	if h.cfg.Mode == "sse" {
		h.serveLegacy(w, r, body, isRPC)
		return
	}
	h.serveStreamable(w, r, body, info, isRPC)
}

func (h *httpServer) serveStreamable(w http.ResponseWriter, r *http.Request, body []byte, info rpcInfo, isRPC bool) {
	if r.URL.Path != h.cfg.Path {
		http.NotFound(w, r)
		return
	}
	switch r.Method {
	case http.MethodPost:
		if !isRPC {
			parseError(w)
			return
		}
		var sess *session
		if info.request && info.method == "initialize" {
			sess = h.newSession()
			if sess.id != "" {
				w.Header().Set(sessionHeader, sess.id)
			}
		} else if sess = h.lookup(w, r); sess == nil {
			return
		}
		if !info.request {
			w.WriteHeader(http.StatusAccepted)
			h.s.handle(body, sessionSink{sess})
			return
		}
		h.serveRequest(w, r, sess, body, info)
	case http.MethodGet:
		if h.cfg.NoGetStream {
			w.Header().Set("Allow", "POST, DELETE")
			http.Error(w, "fakeup: no standalone stream", http.StatusMethodNotAllowed)
			return
		}
		if sess := h.lookup(w, r); sess != nil {
			h.standaloneStream(w, r, sess)
		}
	case http.MethodDelete:
		if h.cfg.NoSession {
			w.Header().Set("Allow", "GET, POST")
			http.Error(w, "fakeup: no sessions", http.StatusMethodNotAllowed)
			return
		}
		if sess := h.lookup(w, r); sess != nil {
			h.endSession(sess)
		}
	default:
		w.Header().Set("Allow", "GET, POST, DELETE")
		http.Error(w, "fakeup: method not allowed", http.StatusMethodNotAllowed)
	}
}

// serveRequest answers a POSTed request in streamable mode: with JSON, or
// with an SSE stream of what handling it sends, ending with its response.
func (h *httpServer) serveRequest(w http.ResponseWriter, r *http.Request, sess *session, body []byte, info rpcInfo) {
	mode := h.cfg.ResponseMode
	cut := info.method == "tools/call" && slices.Contains(h.cfg.EndStreamFor, info.tool)
	if cut {
		mode = "sse"
		w.Header().Set("Connection", "close")
	}
	q := newQueue()
	defer q.close() // drop what comes after the handler returned
	h.s.handle(body, &requestSink{sess: sess, q: q, stream: mode != "json"})

	started := false
	if mode == "sse" {
		h.startSSE(w)
		started = true
	}
	for {
		items, closed := q.take()
		for _, it := range items {
			if !started {
				if it.final {
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(http.StatusOK)
					w.Write(it.msg) //nolint:errcheck // client gone
					return
				}
				h.startSSE(w)
				started = true
			}
			if cut && it.final {
				return
			}
			if writeEvent(w, "message", it.msg) != nil {
				return
			}
			flush(w)
			if cut || it.final {
				return
			}
		}
		if closed {
			if !started {
				// Handled without a response (a cancelled sleep):
				// there is nothing to answer with.
				panic(http.ErrAbortHandler)
			}
			return
		}
		select {
		case <-q.wake:
		case <-r.Context().Done():
			return
		case <-h.done:
			return
		}
	}
}

// standaloneStream serves the GET stream of a streamable session.
func (h *httpServer) standaloneStream(w http.ResponseWriter, r *http.Request, sess *session) {
	h.mu.Lock()
	busy := sess.streaming
	sess.streaming = true
	h.mu.Unlock()
	if busy {
		http.Error(w, "fakeup: a GET stream is already open for this session", http.StatusConflict)
		return
	}
	defer func() {
		h.mu.Lock()
		sess.streaming = false
		h.mu.Unlock()
	}()
	if h.cfg.EndGetStreams != nil {
		h.endedStream(w, *h.cfg.EndGetStreams)
		return
	}
	h.startSSE(w)
	h.pump(w, r, sess)
}

// endedStream answers a GET with an event stream that ends after one event
// with an ID, no data and the retry time retryMs: a server that makes its
// clients open it again and again.
func (h *httpServer) endedStream(w http.ResponseWriter, retryMs int) {
	h.mu.Lock()
	h.eventID++
	id := h.eventID
	h.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	fmt.Fprintf(w, "id: g-%d\nretry: %d\n\n", id, retryMs)
}

// newSession starts a session and counts the request that started it.
func (h *httpServer) newSession() *session {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cfg.NoSession && h.cfg.Mode == "streamable" {
		h.touchLocked(h.implicit)
		return h.implicit
	}
	var b [16]byte
	rand.Read(b[:]) //nolint:errcheck // never fails
	sess := &session{id: hex.EncodeToString(b[:]), gone: make(chan struct{})}
	if h.cfg.Mode == "sse" || !h.cfg.NoGetStream {
		sess.out = newQueue()
	}
	h.sessions[sess.id] = sess
	h.touchLocked(sess)
	return sess
}

// lookup returns the session named by the request's Mcp-Session-Id header
// and counts the request in it. Without one it answers 400 (no header) or
// 404 (unknown or expired session) and returns nil.
func (h *httpServer) lookup(w http.ResponseWriter, r *http.Request) *session {
	if h.cfg.NoSession {
		h.mu.Lock()
		h.touchLocked(h.implicit)
		h.mu.Unlock()
		return h.implicit
	}
	id := r.Header.Get(sessionHeader)
	if id == "" {
		http.Error(w, "fakeup: missing "+sessionHeader, http.StatusBadRequest)
		return nil
	}
	return h.find(w, id)
}

// find is lookup by session id.
func (h *httpServer) find(w http.ResponseWriter, id string) *session {
	h.mu.Lock()
	sess := h.sessions[id]
	if sess != nil {
		h.touchLocked(sess)
	}
	h.mu.Unlock()
	if sess == nil {
		http.Error(w, "fakeup: unknown session", http.StatusNotFound)
	}
	return sess
}

// touchLocked counts a request in sess, which expires with the
// expireSessionAfter'th.
func (h *httpServer) touchLocked(sess *session) {
	sess.requests++
	if n := h.cfg.ExpireSessionAfter; n > 0 && sess.requests >= n {
		h.dropLocked(sess)
	}
}

func (h *httpServer) dropLocked(sess *session) {
	if sess.id != "" && h.sessions[sess.id] == sess {
		delete(h.sessions, sess.id)
		close(sess.gone)
	}
}

func (h *httpServer) endSession(sess *session) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.dropLocked(sess)
}
