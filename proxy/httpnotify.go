package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"

	"github.com/mark3labs/mcp-go/server"
)

// streamWriter wraps a host POST's response so a tool call can write a
// notification (the last progress before the result) onto the request's
// event stream itself, ahead of the result. mcp-go's own notifications go
// through a forwarder goroutine that can lose the last one to the result.
//
// Every write is serialized here. mcp-go's header changes go to a header
// map of its own, copied to the response when it writes the header, so
// they never race with a notification written meanwhile; once a
// notification has upgraded the response to an event stream, mcp-go's own
// WriteHeader is dropped, and mcp-go frames the result as an event too
// (notify marks the session upgraded first).
type streamWriter struct {
	w   http.ResponseWriter
	hdr http.Header // what mcp-go sets, until the header is written

	mu      sync.Mutex
	written bool
	dropped bool // the host cancelled the request: nothing more is written
	// answer, when set, recognises the answer to the POST's request among
	// mcp-go's writes and returns it as the host gets it (httpfront.go).
	answer func(b []byte) ([]byte, bool)
	// out and session, when set, put the servers' own params in mcp-go's
	// messages to this host (hostout.go).
	out     *hostOut
	session string
}

// drop makes everything written from now on go nowhere: the host
// cancelled the request, and is not answered.
func (s *streamWriter) drop() {
	s.mu.Lock()
	s.dropped = true
	s.mu.Unlock()
}

// finish ends a dropped request's response: an event stream that ends
// without an answer, if nothing was written yet.
func (s *streamWriter) finish() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.dropped || s.written {
		return
	}
	s.written = true
	s.w.Header().Set("Content-Type", "text/event-stream")
	s.w.Header().Set("Cache-Control", "no-cache")
	s.w.WriteHeader(http.StatusOK)
}

func newStreamWriter(w http.ResponseWriter) *streamWriter {
	return &streamWriter{w: w, hdr: http.Header{}}
}

func (s *streamWriter) Header() http.Header { return s.hdr }

// Unwrap lets http.ResponseController reach the connection (write
// deadlines).
func (s *streamWriter) Unwrap() http.ResponseWriter { return s.w }

func (s *streamWriter) writeHeaderLocked(code int) {
	if s.written {
		return
	}
	s.written = true
	for k, v := range s.hdr {
		s.w.Header()[k] = v
	}
	s.w.WriteHeader(code)
}

func (s *streamWriter) WriteHeader(code int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dropped {
		return
	}
	s.writeHeaderLocked(code)
}

func (s *streamWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dropped {
		return len(b), nil
	}
	s.writeHeaderLocked(http.StatusOK)
	n := len(b)
	if s.out != nil {
		b = rewriteEvent(s.out, s.session, b)
	}
	if s.answer != nil {
		if out, ok := s.answer(b); ok {
			s.answer = nil
			if _, err := s.w.Write(out); err != nil {
				return 0, err
			}
			return n, nil
		}
	}
	if _, err := s.w.Write(b); err != nil {
		return 0, err
	}
	return n, nil
}

func (s *streamWriter) Flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f, ok := s.w.(http.Flusher); ok {
		f.Flush()
	}
}

// notify writes one notification as an event on this response, upgrading
// it to an event stream if nothing was written yet. A response already
// written as plain JSON cannot carry it.
func (s *streamWriter) notify(ctx context.Context, method string, params json.RawMessage) error {
	b := notificationLine(method, params)
	f, ok := s.w.(http.Flusher)
	if !ok {
		return fmt.Errorf("notification %s not delivered: the response cannot stream", method)
	}
	// mcp-go then writes the result as an event of the same stream.
	if us, ok := server.ClientSessionFromContext(ctx).(server.SessionWithStreamableHTTPConfig); ok {
		us.UpgradeToSSEWhenReceiveNotification()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dropped {
		return nil
	}
	if !s.written {
		s.written = true
		h := s.w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		h.Set("Connection", "keep-alive")
		s.w.WriteHeader(http.StatusOK)
	} else if ct := s.w.Header().Get("Content-Type"); ct != "text/event-stream" {
		return fmt.Errorf("notification %s not delivered: the response is already %s", method, ct)
	}
	if _, err := fmt.Fprintf(s.w, "event: message\ndata: %s\n\n", b); err != nil {
		return err
	}
	f.Flush()
	return nil
}
