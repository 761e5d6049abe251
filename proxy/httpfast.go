package proxy

import (
	"context"
	"fmt"
	"mime"
	"net/http"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// httpFast serves an ordinary tools/call of an HTTP host session here, as
// the stdio host's fast path does (stdiohost.go), and reports whether it
// did. mcp-go's streamable HTTP server parses each request several times,
// starts a goroutine per request to forward notifications, and encodes the
// result that rawresult.go then replaces with the server's own bytes.
//
// It declines, and mcp-go serves the request as before, unless all of
// these hold: the request is one parseFastCall accepts (mcp-go would read
// it the same way); its Content-Type and protocol version header are ones
// mcp-go accepts; the session is one mcp-go registered, initialized, has
// not ended, and has had a request served by mcp-go within touchEvery (so
// mcp-go's idle clock, which only its own requests move, never runs out
// on a session in use); the host did not declare elicitation (mcp-go asks
// for it on the request's own stream, which only mcp-go can reach; it asks
// for sampling on the session's GET stream, from either path); the
// tool is registered and not a task tool; no other request of the session
// with that id is in flight.
//
// Both paths run the same tool handler, so the call is governed the same
// way: decided, recorded, forwarded, answered with the server's own bytes.
// The answer is a JSON body, or the last event of the stream a
// notification (progress) opened; it carries the id as the host sent it.
func (p *Proxy) httpFast(ctx context.Context, sw *streamWriter, r *http.Request, body []byte, sid string) bool {
	c, ok := parseFastCall(body)
	if !ok || !mcpGoAccepts(r) {
		return false // not a plain tools/call, or one mcp-go refuses
	}
	key, ok := rawIDKey(c.id)
	if !ok {
		return false
	}
	p.hosts.mu.Lock()
	h, every := p.hosts.byID[sid], p.hosts.touchEvery
	p.hosts.mu.Unlock()
	if h == nil || h.cs == nil || !h.cs.Initialized() || time.Now().UnixNano()-h.seen.Load() > int64(every) {
		return false
	}
	if ci, ok := h.cs.(server.SessionWithClientInfo); ok && ci.GetClientCapabilities().Elicitation != nil {
		return false
	}
	if st, ok := h.cs.(server.SessionWithTools); ok && len(st.GetSessionTools()) > 0 {
		return false // mcp-go looks a session's own tools up first
	}
	tool := p.srv.GetTool(c.req.Params.Name)
	if tool == nil || tool.Tool.Execution != nil {
		return false // mcp-go answers "not found" (and the call is recorded), or sees to tasks
	}
	rk := reqKey{session: sid, id: key}
	if !p.posts.add(rk, sw) {
		return false // which one a cancellation means is mcp-go's to decide
	}
	defer p.posts.remove(rk, sw)

	ctx = context.WithValue(p.srv.WithContext(ctx, h.cs), remoteAddrKey, r.RemoteAddr)
	ctx, cancel := p.cancels.cancellable(context.WithValue(ctx, fastKeyKey{}, rk), &rk)
	defer cancel()
	res, err := callRecovered(ctx, tool.Handler, c.req)
	raw, _, _ := p.results.take(rk) // an error object is in err too
	if cancelledByHost(ctx) {
		return true // the host cancelled it: no answer (MCP); sw was dropped
	}
	if werr := sw.reply(p.answerLine(c.id, res, err, raw)); werr != nil {
		p.log.Debug("answer not delivered to host", "session", sid, "err", werr)
	}
	return true
}

// touched notes that mcp-go is about to serve a request of session sid
// that moves its idle clock: one with a method, a Content-Type and
// protocol version it accepts, for a session it knows.
func (p *Proxy) touched(r *http.Request, sid string) {
	if !mcpGoAccepts(r) {
		return
	}
	p.hosts.mu.Lock()
	h := p.hosts.byID[sid]
	p.hosts.mu.Unlock()
	if h != nil {
		h.seen.Store(time.Now().UnixNano())
	}
}

// mcpGoAccepts reports whether mcp-go's handling of a POST gets past its
// headers: a JSON Content-Type, and a protocol version it supports or none.
func mcpGoAccepts(r *http.Request) bool {
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return false
	}
	v := r.Header.Get(mcp.HeaderProtocolVersion)
	return v == "" || mcp.IsValidProtocolVersion(v)
}

// reply writes the answer to the POST's request: the response's JSON body
// (with the newline mcp-go's encoder ends it with), or, once a
// notification has made the response an event stream, its last event.
func (s *streamWriter) reply(line []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dropped {
		return nil
	}
	if !s.written {
		s.hdr.Set("Content-Type", "application/json")
		s.writeHeaderLocked(http.StatusOK)
		_, err := s.w.Write(append(line, '\n'))
		return err
	}
	if ct := s.w.Header().Get("Content-Type"); ct != "text/event-stream" {
		return fmt.Errorf("answer not written: the response is already %s", ct)
	}
	if _, err := fmt.Fprintf(s.w, "event: message\ndata: %s\n\n", line); err != nil {
		return err
	}
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
	return nil
}
