package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
)

// streamWriter is a host POST's response. It starts as nothing written;
// the first notification or request for the host written on it makes it
// an event stream, and the answer is then its last event; otherwise the
// answer is its JSON body. Every write is serialized here.
type streamWriter struct {
	w http.ResponseWriter

	mu      sync.Mutex
	written bool // the status line is out
	closed  bool // the answer is out: nothing more goes on this response
	dropped bool // the host cancelled the request: nothing more is written
}

func newStreamWriter(w http.ResponseWriter) *streamWriter { return &streamWriter{w: w} }

// drop makes everything written from now on go nowhere: the host
// cancelled the request, and is not answered.
func (s *streamWriter) drop() {
	s.mu.Lock()
	s.dropped = true
	s.mu.Unlock()
}

// finish ends a response nothing answered: a dropped request's event
// stream ends without an answer.
func (s *streamWriter) finish() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if !s.dropped || s.written {
		return
	}
	s.written = true
	s.w.Header().Set("Content-Type", "text/event-stream")
	s.w.Header().Set("Cache-Control", "no-cache")
	s.w.WriteHeader(http.StatusOK)
}

// accepted answers a POST whose message needs no answer (202), unless
// something was streamed on it already.
func (s *streamWriter) accepted() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	if s.written || s.dropped {
		return
	}
	s.written = true
	s.w.WriteHeader(http.StatusAccepted)
}

// notify writes one notification (params one line of JSON, as they are)
// as an event on this response (event).
func (s *streamWriter) notify(_ context.Context, method string, params json.RawMessage) error {
	return s.event(notificationLine(method, params))
}

// errAnswered is event's error once the response carries its answer.
var errAnswered = errors.New("the request is answered: its stream is closed")

// event writes msg, one JSON-RPC message, as an event on this response,
// making it an event stream if nothing was written yet.
func (s *streamWriter) event(msg []byte) error {
	f, ok := s.w.(http.Flusher)
	if !ok {
		return errors.New("the response cannot stream")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dropped {
		return nil
	}
	if s.closed {
		return errAnswered
	}
	if !s.written {
		s.written = true
		h := s.w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		h.Set("Connection", "keep-alive")
		s.w.WriteHeader(http.StatusOK)
	}
	if _, err := fmt.Fprintf(s.w, "event: message\ndata: %s\n\n", msg); err != nil {
		return err
	}
	f.Flush()
	return nil
}
