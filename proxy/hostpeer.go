package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
)

// hostPeer is what every host connection keeps of its host, whatever
// carries it (stdiosession.go, httpsession.go): whether it is initialized
// and its capabilities, as its initialize (or a stateless request) told
// them, and the requests mcp-guard sent it (a server's sampling or
// elicitation, mcp-guard's own approval form) that wait for its answer. A
// request goes out with its params as given and its answer comes back as
// the host wrote it: nothing re-encodes either.
type hostPeer struct {
	initialized atomic.Bool
	// stateless is set once the host has sent a 2026-07-28 request: it
	// is sent nothing unasked but on a subscriptions/listen it opened.
	stateless atomic.Bool
	nextID    atomic.Int64 // ids of the requests mcp-guard sends the host

	mu        sync.Mutex
	caps      mcp.ClientCapabilities
	pending   map[int64]chan hostResponse // requests to the host awaiting its answer, by id
	withdrawn []int64                     // requests withdrawn unanswered, oldest first
}

// hostResponse is the host's answer to a request mcp-guard sent it.
type hostResponse struct {
	result json.RawMessage
	err    *mcp.JSONRPCErrorDetails
}

func (s *hostPeer) markInitialized() { s.initialized.Store(true) }

// peer is the hostPeer itself: every connection embeds one.
func (s *hostPeer) peer() *hostPeer { return s }

func (s *hostPeer) isInitialized() bool { return s.initialized.Load() }

func (s *hostPeer) clientCaps() mcp.ClientCapabilities {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.caps
}

func (s *hostPeer) setClientCaps(caps mcp.ClientCapabilities) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.caps = caps
}

// sendFunc writes one request line to the host.
type sendFunc func(ctx context.Context, method string, line []byte) error

// withdrawnMax bounds the requests a session remembers it withdrew.
const withdrawnMax = 256

// ask sends the host a request of method with params (one line of JSON,
// sent as they are) and waits for its answer: its result as the host wrote
// it, or its error. If ctx ends first, the request is withdrawn: withdraw
// tells the host (its id), and an answer that comes after is taken and
// dropped (answered).
func (s *hostPeer) ask(ctx context.Context, method string, params json.RawMessage, send sendFunc, withdraw func(id int64)) (json.RawMessage, *mcp.JSONRPCErrorDetails, error) {
	id := s.nextID.Add(1)
	ch := make(chan hostResponse, 1)
	s.mu.Lock()
	if s.pending == nil {
		s.pending = map[int64]chan hostResponse{}
	}
	s.pending[id] = ch
	s.mu.Unlock()
	line := append([]byte(`{"jsonrpc":"2.0","id":`), strconv.FormatInt(id, 10)...)
	line = append(append(line, `,"method":`...), jsonString(method)...)
	line = append(append(append(line, `,"params":`...), params...), '}')
	if err := send(ctx, method, line); err != nil {
		s.forget(id, false)
		return nil, nil, fmt.Errorf("failed to write %s request: %w", method, err)
	}
	select {
	case <-ctx.Done():
		if s.forget(id, true) {
			withdraw(id)
		}
		return nil, nil, ctx.Err()
	case r := <-ch:
		return r.result, r.err, nil
	}
}

// forget ends request id's wait; withdrawn, it is remembered so that its
// late answer is taken. It reports whether the request was still waiting.
func (s *hostPeer) forget(id int64, withdrawn bool) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, waiting := s.pending[id] // not, once answered
	delete(s.pending, id)
	if waiting && withdrawn {
		s.withdrawn = append(s.withdrawn, id)
		if len(s.withdrawn) > withdrawnMax {
			s.withdrawn = s.withdrawn[1:]
		}
	}
	return waiting
}

// answered takes a host's message that answers a request ask sent, or
// one it withdrew (dropped: nothing waits for it), and reports whether it
// was one.
func (s *hostPeer) answered(msg []byte) bool {
	var r struct {
		ID     json.RawMessage          `json:"id"`
		Method *string                  `json:"method"`
		Result json.RawMessage          `json:"result"`
		Error  *mcp.JSONRPCErrorDetails `json:"error"`
	}
	if json.Unmarshal(msg, &r) != nil || r.Method != nil || (r.Result == nil && r.Error == nil) {
		return false
	}
	id, err := strconv.ParseInt(string(r.ID), 10, 64)
	if err != nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if ch, ok := s.pending[id]; ok {
		delete(s.pending, id)
		select {
		case ch <- hostResponse{result: r.Result, err: r.Error}:
		default:
		}
		return true
	}
	if i := slices.Index(s.withdrawn, id); i >= 0 {
		s.withdrawn = slices.Delete(s.withdrawn, i, i+1) // one answer is late; a second is not expected
		return true
	}
	return false
}
