package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strconv"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
)

// postMsg is what the endpoint reads of a POST's one message to route it.
type postMsg struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  json.RawMessage `json:"error"`
}

// era is the protocol revision a POST declares: in its Mcp-Protocol-Version
// header and, from 2026-07-28, in its _meta too.
type era struct {
	modern        bool
	header, inMsg string
}

func readEra(h http.Header, params json.RawMessage) era {
	e := era{header: h.Get(mcp.HeaderProtocolVersion)}
	var p struct {
		Meta *mcp.Meta `json:"_meta"`
	}
	if json.Unmarshal(params, &p) == nil {
		e.inMsg = p.Meta.ProtocolVersion()
	}
	e.modern = mcp.IsModernProtocol(e.inMsg) || mcp.IsModernProtocol(e.header)
	return e
}

// post serves one host POST: its body was read and capped by guardHTTP.
// A 2025 host's request is served in its session (initialize starts one);
// its notification is taken (202); its answer to a request mcp-guard sent
// goes to the request waiting for it (202). A 2026-07-28 host's request is
// served in a session of its own.
func (e *httpEndpoint) post(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		e.refuseHTTP(w, r, http.StatusBadRequest, "could not read the request body")
		return
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		e.refuseHTTP(w, r, http.StatusBadRequest, "Content-Type must be application/json")
		return
	}
	if isBatch(body) {
		e.p.log.Warn("host sent a JSON-RPC batch; refused", "remote", r.RemoteAddr)
		writeRPC(w, http.StatusBadRequest, batchError())
		return
	}
	var m postMsg
	if err := json.Unmarshal(body, &m); err != nil {
		e.p.log.Warn("host POST is not one JSON-RPC message", "remote", r.RemoteAddr, "err", err)
		writeRPCError(w, nil, mcp.PARSE_ERROR, "mcp-guard: the request body is not a JSON-RPC message", http.StatusBadRequest)
		return
	}
	v := readEra(r.Header, m.Params)
	if !v.modern && m.Method != string(mcp.MethodInitialize) && e.versionRefused(w, r) {
		return
	}
	if m.Method == "" && m.ID != nil {
		e.answer(w, r, body, m, v)
		return
	}
	if v.modern {
		e.postModern(w, r, body, m, v)
		return
	}
	var s *httpSession
	if m.Method == string(mcp.MethodInitialize) {
		s = newHTTPSession(e, newSessionID(), false)
	} else if s = e.session(w, r); s == nil {
		return
	}
	s.touch()
	if mayName(body, cancelledMethod) {
		if n, ok := parseCancelled(body); ok {
			key := reqKey{session: s.id, id: n.id}
			e.p.posts.drop(key)
			e.p.cancels.hostCancel(key, n.reason)
		}
	}
	sw := newStreamWriter(w)
	defer sw.finish()
	ctx := e.requestContext(r, s, sw)
	// A plain tools/call is served here, before the body is read any other
	// way: parseFastCall reads it whole, as encoding/json would.
	if e.fast(ctx, sw, body, s) {
		return
	}
	if k, ok := rawIDKey(m.ID); ok {
		key := reqKey{session: s.id, id: k}
		e.p.posts.add(key, sw)
		defer e.p.posts.remove(key, sw)
	}
	e.serve(ctx, sw, s, body, m, v)
}

// postModern serves a 2026-07-28 host's request: in a session of its own
// that ends with it, the host being the one stateless host (hosts.go).
// A subscriptions/listen's connection is connected while the listen
// lasts: it is sent what its listen opted in to.
func (e *httpEndpoint) postModern(w http.ResponseWriter, r *http.Request, body []byte, m postMsg, v era) {
	if !e.modernValid(w, r, m, v) {
		return
	}
	s := newHTTPSession(e, "", true)
	defer s.end.Do(func() { close(s.done) })
	if m.Method == string(mcp.MethodSubscriptionsListen) && len(m.ID) > 0 && string(m.ID) != "null" {
		s.id = "listen stream " + strconv.FormatUint(e.p.lists.Add(1), 10)
		s.listenID = m.ID
		if err := e.p.connect(s); err != nil {
			e.refuseHTTP(w, r, http.StatusInternalServerError, "the listen could not be set up")
			return
		}
		defer e.p.disconnect(s)
	}
	sw := newStreamWriter(w)
	defer sw.finish()
	e.serve(e.requestContext(r, s, sw), sw, s, body, m, v)
}

// modernValid checks what 2026-07-28 asks of an HTTP request's headers,
// and answers (400) one that fails: no Last-Event-ID; the protocol version
// in both the header and _meta, the same, one mcp-guard speaks; and the
// standard headers (Mcp-Method, Mcp-Name, a tool's Mcp-Param-*) saying
// what the body says, so that nothing that routes or checks by headers
// reads another request than the one served.
func (e *httpEndpoint) modernValid(w http.ResponseWriter, r *http.Request, m postMsg, v era) bool {
	var id any
	_ = json.Unmarshal(m.ID, &id)
	level := slog.LevelWarn
	if len(m.ID) == 0 {
		level = slog.LevelDebug // the go-sdk client cancels its listens so at close
	}
	bad := func(code int, msg string) bool {
		e.p.log.Log(r.Context(), level, "host request refused", "method", m.Method, "why", msg, "remote", r.RemoteAddr)
		writeRPCError(w, id, code, msg, http.StatusBadRequest)
		return false
	}
	switch {
	case r.Header.Get(mcp.HeaderLastEventID) != "":
		return bad(mcp.HEADER_MISMATCH, "Last-Event-ID is not part of protocol "+mcp.ProtocolVersion20260728+": streams are not resumed; send the request again with a new id")
	case v.header == "":
		return bad(mcp.HEADER_MISMATCH, mcp.HeaderProtocolVersion+" header is required with "+mcp.MetaKeyProtocolVersion)
	case v.inMsg == "":
		return bad(mcp.INVALID_PARAMS, "missing or invalid _meta field "+mcp.MetaKeyProtocolVersion)
	case v.header != v.inMsg:
		return bad(mcp.HEADER_MISMATCH, mcp.HeaderProtocolVersion+" header "+v.header+" does not match the request's "+mcp.MetaKeyProtocolVersion+" "+v.inMsg)
	case !mcp.IsValidProtocolVersion(v.inMsg):
		res := mcp.UnsupportedProtocolVersionError{Version: v.inMsg, Supported: mcp.ValidProtocolVersions}.JSONRPCError()
		res.ID = mcp.NewRequestId(id)
		b, _ := json.Marshal(res)
		writeRPC(w, http.StatusBadRequest, b)
		return false
	}
	if err := mcp.ValidateStandardHeaders(r.Header.Get, v.inMsg, mcp.MCPMethod(m.Method), m.Params); err != nil {
		return bad(mcp.HEADER_MISMATCH, err.Error())
	}
	if m.Method == string(mcp.MethodToolsCall) {
		var call struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(m.Params, &call) == nil {
			if t, ok := e.p.headerTool(call.Name); ok {
				lookup := func(name string) (string, bool) {
					vs := r.Header.Values(name)
					if len(vs) == 0 {
						return "", false
					}
					return vs[0], true
				}
				if err := mcp.ValidateParamHeadersLookup(lookup, &t, m.Params); err != nil {
					return bad(mcp.HEADER_MISMATCH, err.Error())
				}
			}
		}
	}
	return true
}

// requestContext is the context a host's request is served under: its
// session, its remote address, and its own response for what the request
// causes to be sent (progress, an elicitation).
func (e *httpEndpoint) requestContext(r *http.Request, s *httpSession, sw *streamWriter) context.Context {
	ctx := withConn(r.Context(), s)
	ctx = context.WithValue(ctx, remoteAddrKey, r.RemoteAddr)
	ctx = context.WithValue(ctx, notifierKey{}, hostNotifier(sw.notify))
	return context.WithValue(ctx, postStreamKey{}, sw)
}

// serve answers the POST (Proxy.answer): 202 for a notification, else the
// answer, as JSON, or as the last event once something went on the
// response's stream first. While a request is served, what the session is
// sent unasked goes on its stream too (as a GET stream's would).
func (e *httpEndpoint) serve(ctx context.Context, sw *streamWriter, s *httpSession, body []byte, m postMsg, v era) {
	isRequest := len(m.ID) > 0 && string(m.ID) != "null"
	stop, forwarded := make(chan struct{}), make(chan struct{})
	if isRequest {
		go func() {
			defer close(forwarded)
			for e.forwardOne(ctx, sw, s, stop) {
			}
		}()
	} else {
		close(forwarded)
	}
	line, code, answered := e.p.answer(ctx, body)
	close(stop)
	<-forwarded
	for isRequest && e.forwardOne(ctx, sw, s, nil) {
		// what came while it was answered goes before the answer
	}
	if !answered {
		sw.accepted()
		return
	}
	if ctx.Err() != nil || line == nil {
		return // the host is gone, or the answer could not be encoded
	}
	status := http.StatusOK
	if code != 0 && v.modern {
		status = httpStatusOf(code) // 2026-07-28 maps errors onto statuses
	} else if m.Method == string(mcp.MethodInitialize) && code == 0 {
		if err := e.startSession(ctx, s, fmt.Sprint(ctx.Value(remoteAddrKey))); err != nil {
			e.p.log.Error("host session not started", "err", err)
			var id any
			_ = json.Unmarshal(m.ID, &id)
			line, _ = json.Marshal(mcp.NewJSONRPCError(mcp.NewRequestId(id), mcp.INTERNAL_ERROR, "mcp-guard: the session could not be started; try again", nil))
		} else {
			sw.w.Header().Set(mcp.HeaderSessionID, s.id)
		}
	}
	if err := sw.replyStatus(line, status); err != nil {
		e.p.log.Debug("answer not delivered to host", "session", s.id, "err", err)
	}
}

// forwardOne writes on the request's stream one notification s was sent
// unasked (queue). It waits for one until stop is closed or ctx done; with
// stop nil it does not wait. It reports whether it wrote one.
func (e *httpEndpoint) forwardOne(ctx context.Context, sw *streamWriter, s *httpSession, stop <-chan struct{}) bool {
	var line []byte
	if stop == nil {
		select {
		case line = <-s.lines:
		default:
			return false
		}
	} else {
		select {
		case line = <-s.lines:
		case <-stop:
			return false
		case <-ctx.Done():
			return false
		}
	}
	if err := sw.event(line); err != nil {
		e.p.log.Debug("notification not delivered to host", "session", s.id, "err", err)
	}
	return true
}

// answer takes a host's answer to a request mcp-guard sent it. A
// 2026-07-28 host is sent none (that revision has no server-to-client
// requests).
func (e *httpEndpoint) answer(w http.ResponseWriter, r *http.Request, body []byte, m postMsg, v era) {
	if v.modern {
		var id any
		_ = json.Unmarshal(m.ID, &id)
		writeRPCError(w, id, mcp.INVALID_REQUEST, "mcp-guard: protocol "+mcp.ProtocolVersion20260728+" has no server-to-client requests to answer", http.StatusBadRequest)
		return
	}
	s := e.session(w, r)
	if s == nil {
		return
	}
	s.touch()
	// An answer to a request mcp-guard withdrew (it told the host so) is
	// taken too, and dropped: MCP's HTTP transport accepts a response, and
	// a client can take a refusal as its connection failing.
	if !s.answered(body) && !(emptyJSON(m.Result) && emptyJSON(m.Error)) {
		e.refuseHTTP(w, r, http.StatusBadRequest, "no request of this session waits for that answer")
		return
	}
	w.WriteHeader(http.StatusAccepted)
}

// emptyJSON reports whether v is absent, null, {} or [] (of a ping's
// answer, both its result and its error are).
func emptyJSON(v json.RawMessage) bool {
	switch string(bytes.Join(bytes.Fields(v), nil)) {
	case "", "null", "{}", "[]":
		return true
	}
	return false
}

// httpStatusOf is the HTTP status 2026-07-28 gives a JSON-RPC error code.
func httpStatusOf(code int) int {
	switch code {
	case mcp.METHOD_NOT_FOUND:
		return http.StatusNotFound
	case mcp.HEADER_MISMATCH, mcp.MISSING_REQUIRED_CLIENT_CAPABILITY, mcp.UNSUPPORTED_PROTOCOL_VERSION,
		mcp.INVALID_REQUEST, mcp.INVALID_PARAMS, mcp.PARSE_ERROR:
		return http.StatusBadRequest
	}
	return http.StatusOK
}

// writeRPC answers a POST with one JSON-RPC message b.
func writeRPC(w http.ResponseWriter, status int, b []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

// writeRPCError answers a POST with a JSON-RPC error.
func writeRPCError(w http.ResponseWriter, id any, code int, msg string, status int) {
	b, _ := json.Marshal(mcp.NewJSONRPCError(mcp.NewRequestId(id), code, msg, nil))
	writeRPC(w, status, b)
}

// posts are the HTTP host's requests in flight, by session and id, each
// with the response it is answered on.
type posts struct {
	mu  sync.Mutex
	inf map[reqKey]*streamWriter
}

// add notes w as the response of request k; it reports false, and notes
// nothing, if another request of that session and id is in flight.
func (s *posts) add(k reqKey, w *streamWriter) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inf == nil {
		s.inf = map[reqKey]*streamWriter{}
	}
	if _, dup := s.inf[k]; dup {
		return false
	}
	s.inf[k] = w
	return true
}

func (s *posts) remove(k reqKey, w *streamWriter) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.inf[k] == w {
		delete(s.inf, k)
	}
}

// drop makes the request's answer go unwritten: the host cancelled it.
func (s *posts) drop(k reqKey) {
	s.mu.Lock()
	w := s.inf[k]
	s.mu.Unlock()
	if w != nil {
		w.drop()
	}
}
