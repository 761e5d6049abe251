package proxy

import (
	"context"
	"fmt"
	"net/http"
)

// fast serves an ordinary tools/call of a 2025 HTTP host session here, as
// the stdio host's fast path does (stdiohost.go), and reports whether it
// did: one parse of the request, then the tool handler.
//
// It declines, and the call is served by methods.go's tools/call handler
// (serve), unless the request is one parseFastCall accepts (encoding/json
// would read it the same way), the tool is exposed, and no other request
// of the session with that id is in flight.
//
// Both paths run the same tool handler, under the same context, so the
// call is governed the same way: decided, recorded, forwarded, answered
// with the server's own bytes. The answer is a JSON body, or the last
// event of the stream a notification (progress) or a request for the host
// (elicitation) opened; it carries the id as the host sent it.
func (e *httpEndpoint) fast(ctx context.Context, sw *streamWriter, body []byte, s *httpSession) bool {
	c, ok := parseFastCall(body)
	if !ok {
		return false
	}
	key, ok := rawIDKey(c.id)
	if !ok {
		return false
	}
	tool, ok := e.p.current(c.req.Params.Name)
	if !ok {
		return false // refused and recorded by toolsCall
	}
	rk := reqKey{session: s.id, id: key}
	if !e.p.posts.add(rk, sw) {
		return false // which one a cancellation means is the handler's to decide
	}
	defer e.p.posts.remove(rk, sw)
	ctx, cancel := e.p.fastContext(ctx, rk)
	defer cancel()
	line, answered := e.p.fastAnswer(ctx, tool, c)
	if !answered {
		return true // the host cancelled it: no answer (MCP); sw was dropped
	}
	if werr := sw.reply(line); werr != nil {
		e.p.log.Debug("answer not delivered to host", "session", s.id, "err", werr)
	}
	return true
}

// reply writes the answer to the POST's request (replyStatus, 200).
func (s *streamWriter) reply(line []byte) error { return s.replyStatus(line, http.StatusOK) }

// replyStatus writes the answer to the POST's request: the response's
// JSON body with status, or, once a notification or request has made the
// response an event stream, its last event.
func (s *streamWriter) replyStatus(line []byte, status int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dropped || s.closed {
		return nil
	}
	s.closed = true
	if !s.written {
		s.written = true
		s.w.Header().Set("Content-Type", "application/json")
		s.w.WriteHeader(status)
		_, err := s.w.Write(append(line, '\n'))
		return err
	}
	if _, err := fmt.Fprintf(s.w, "event: message\ndata: %s\n\n", line); err != nil {
		return err
	}
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
	return nil
}
