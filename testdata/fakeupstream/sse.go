package fakeupstream

// Server-sent events, and the legacy HTTP+SSE transport (protocol
// 2024-11-05) served when the script's http.mode is "sse".

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// startSSE answers 200 with an event stream and, with http.primeEvent,
// sends the priming event (an id and empty data).
func (h *httpServer) startSSE(w http.ResponseWriter) {
	hdr := w.Header()
	hdr.Set("Content-Type", "text/event-stream")
	hdr.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	if h.cfg.PrimeEvent {
		h.mu.Lock()
		h.eventID++
		id := h.eventID
		h.mu.Unlock()
		fmt.Fprintf(w, "id: %d\ndata:\n\n", id)
	}
	flush(w)
}

func flush(w http.ResponseWriter) {
	http.NewResponseController(w).Flush() //nolint:errcheck // client gone
}

// writeEvent writes one event; each line of data (split at CR, LF or CRLF)
// becomes a data field.
func writeEvent(w io.Writer, event string, data []byte) error {
	var b bytes.Buffer
	if event != "" {
		b.WriteString("event: " + event + "\n")
	}
	data = bytes.ReplaceAll(data, []byte("\r\n"), []byte("\n"))
	data = bytes.ReplaceAll(data, []byte("\r"), []byte("\n"))
	for line := range bytes.SplitSeq(data, []byte("\n")) {
		b.WriteString("data: ")
		b.Write(line)
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	_, err := w.Write(b.Bytes())
	return err
}

// pump writes what is posted to sess's stream as "message" events until the
// client goes away, the session ends or the server shuts down.
func (h *httpServer) pump(w http.ResponseWriter, r *http.Request, sess *session) {
	for {
		items, _ := sess.out.take()
		for _, it := range items {
			if writeEvent(w, "message", it.msg) != nil {
				return
			}
		}
		if len(items) > 0 {
			flush(w)
		}
		select {
		case <-sess.out.wake:
		case <-r.Context().Done():
			return
		case <-sess.gone:
			return
		case <-h.done:
			return
		}
	}
}

// serveLegacy is http.mode "sse". A GET of http.path opens a session whose
// stream starts with the endpoint event; every POST but one to http.path
// without a sessionId query parameter is a message for the session that
// parameter names, answered 202 while the outcome goes to the stream.
func (h *httpServer) serveLegacy(w http.ResponseWriter, r *http.Request, body []byte, isRPC bool) {
	query := r.URL.Query()
	switch {
	case r.Method == http.MethodGet && r.URL.Path == h.cfg.Path:
		sess := h.newSession()
		defer h.endSession(sess)
		h.startSSE(w)
		endpoint := strings.ReplaceAll(h.cfg.Endpoint, "{session}", sess.id)
		if writeEvent(w, "endpoint", []byte(endpoint)) != nil {
			return
		}
		flush(w)
		h.pump(w, r, sess)
	case r.Method == http.MethodPost && (r.URL.Path != h.cfg.Path || query.Has("sessionId")):
		id := query.Get("sessionId")
		if id == "" {
			http.Error(w, "fakeup: missing sessionId", http.StatusBadRequest)
			return
		}
		sess := h.find(w, id)
		if sess == nil {
			return
		}
		if !isRPC {
			parseError(w)
			return
		}
		w.WriteHeader(http.StatusAccepted)
		flush(w)
		h.s.handle(body, sessionSink{sess})
	case r.URL.Path == h.cfg.Path:
		w.Header().Set("Allow", "GET")
		http.Error(w, "fakeup: legacy HTTP+SSE server: GET this URL for the event stream", http.StatusMethodNotAllowed)
	default:
		http.NotFound(w, r)
	}
}
