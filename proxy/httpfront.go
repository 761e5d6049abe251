package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// httpFront is what the HTTP host's requests pass before mcp-go's
// streamable HTTP server: a GET stream only for a session that exists, a
// JSON-RPC batch refused in words, a host's cancellation carried out
// (the request's answer dropped, its upstream told the host's reason),
// and answers that carry the servers' own bytes in place of mcp-go's
// encoding (rawresult.go).
// Each POST gets a streamWriter (httpnotify.go).
func (p *Proxy) httpFront(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		modern := mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion))
		sid := r.Header.Get(server.HeaderKeySessionID)
		// T1: whatever this request's response carries leaves through here.
		w = redactWriter{ResponseWriter: w, p: p, host: "http " + sid}
		switch r.Method {
		case http.MethodGet:
			if modern {
				break // mcp-go says what that protocol has instead
			}
			if sid == "" {
				p.log.Warn("host GET refused: no session id", "remote", r.RemoteAddr)
				http.Error(w, "mcp-guard: a GET stream belongs to a session: send the Mcp-Session-Id header that initialize returned", http.StatusBadRequest)
				return
			}
			if !p.knownHost(sid) {
				p.log.Warn("host GET refused: unknown session", "remote", r.RemoteAddr)
				http.Error(w, "mcp-guard: no such session (it ended, or was never started): initialize a new one", http.StatusNotFound)
				return
			}
			w = outWriter{ResponseWriter: w, o: &p.out, session: sid}
		case http.MethodPost:
			p.httpPost(next, w, r, sid, modern)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// knownHost reports whether id is a host session mcp-go started (an
// initialize it answered) and has not ended.
func (p *Proxy) knownHost(id string) bool {
	p.hosts.mu.Lock()
	defer p.hosts.mu.Unlock()
	_, ok := p.hosts.byID[id]
	return ok
}

// httpPost serves one host POST (its body already read and capped by
// guardHTTP).
func (p *Proxy) httpPost(next http.Handler, w http.ResponseWriter, r *http.Request, sid string, modern bool) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "mcp-guard: could not read the request body", http.StatusBadRequest)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	if isBatch(body) {
		p.log.Warn("host sent a JSON-RPC batch; refused", "remote", r.RemoteAddr)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		w.Write(batchError())
		return
	}
	if sid != "" && mayName(body, cancelledMethod) {
		if n, ok := parseCancelled(body); ok {
			key := reqKey{session: sid, id: n.id}
			p.posts.drop(key)
			p.cancels.hostCancel(key, n.reason)
		}
	}
	if p.out.hostAnswer(sid, body) {
		// The host answered a request this relay withdrew (it told the
		// host so): accepted and dropped, as MCP's HTTP transport accepts
		// a response. mcp-go, which forgot the request, would refuse it
		// with 400, and a client can take that as its connection failing.
		p.log.Debug("late answer to a withdrawn request dropped", "session", sid)
		w.WriteHeader(http.StatusAccepted)
		return
	}
	sw := newStreamWriter(w)
	sw.out, sw.session = &p.out, sid
	defer sw.finish()
	ctx := context.WithValue(r.Context(), notifierKey{}, hostNotifier(sw.notify))
	// A plain tools/call is served here, before the body is read any other
	// way: parseFastCall reads it whole, as mcp-go would.
	if !modern && sid != "" && p.httpFast(ctx, sw, r, body, sid) {
		return
	}
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal(body, &m) != nil || m.Method == "" {
		next.ServeHTTP(sw, r.WithContext(ctx))
		return
	}
	if !modern && sid != "" {
		p.touched(r, sid)
	}
	if k, ok := rawIDKey(m.ID); ok && sid != "" && !modern {
		key := reqKey{session: sid, id: k}
		p.posts.add(key, sw)
		defer p.posts.remove(key, sw)
		defer p.results.take(key) // what no answer took
		sw.answer = p.answerSplicer(key, answerMethod(m.Method, m.Params))
	} else if _, list := listKey[answerMethod(m.Method, m.Params)]; ok && list && modern {
		// A stateless request's list: the servers' own items, as for a
		// session's, under a key of this request's own.
		key := reqKey{session: "stateless " + strconv.FormatUint(p.lists.Add(1), 10), id: k}
		sw.answer = p.answerSplicer(key, m.Method)
	}
	next.ServeHTTP(sw, r.WithContext(ctx))
}

// answerSplicer recognises, among what mcp-go writes on a POST's
// response, the answer to the request key, and returns it with the
// servers' own bytes in place of mcp-go's result (rawresult.go). mcp-go
// writes each message in one Write: a JSON body, or one event.
func (p *Proxy) answerSplicer(key reqKey, method string) func(b []byte) ([]byte, bool) {
	prefix := []byte("event: message\ndata: ")
	return func(b []byte) ([]byte, bool) {
		payload := bytes.TrimPrefix(b, prefix)
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
		}
		if json.Unmarshal(bytes.TrimRight(payload, "\r\n"), &m) != nil || m.Method != "" {
			return nil, false
		}
		if k, ok := rawIDKey(m.ID); !ok || k != key.id {
			return nil, false
		}
		out := append([]byte(nil), b[:len(b)-len(payload)]...)
		return append(out, spliceAnswer(payload, p.hostResultOf(key, method))...), true
	}
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
