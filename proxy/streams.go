package proxy

import "sync"

// hostStream is a host session that can be sent what every host gets (a
// server's log message): the stdio host's, each 2025 HTTP host's.
type hostStream interface {
	// sendAll writes line, one notification, to the host, or drops it if
	// the host's stream is full.
	sendAll(line []byte)
}

// hostStreams are the host sessions connected now. Its zero value is
// ready.
type hostStreams struct {
	mu sync.Mutex
	m  map[hostStream]struct{}
}

func (h *hostStreams) add(s hostStream) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil {
		h.m = map[hostStream]struct{}{}
	}
	h.m[s] = struct{}{}
}

func (h *hostStreams) remove(s hostStream) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.m, s)
}

// broadcast sends line to every connected host.
func (h *hostStreams) broadcast(line []byte) {
	h.mu.Lock()
	all := make([]hostStream, 0, len(h.m))
	for s := range h.m {
		all = append(all, s)
	}
	h.mu.Unlock()
	for _, s := range all {
		s.sendAll(line)
	}
}
