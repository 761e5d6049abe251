package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// stdioSession is the stdio host's session as mcp-go's server sees it:
// server.ClientSession and the extensions mcp-guard's handlers use
// (logging, client info, sampling and elicitation). Each ServeStdio has its
// own: mcp-go's StdioServer keeps one session for the whole process.
type stdioSession struct {
	h           *stdioHost
	notes       chan mcp.JSONRPCNotification // mcp-go's notifications, written by stdioHost.notes
	initialized atomic.Bool
	level       atomic.Value // mcp.LoggingLevel
	nextID      atomic.Int64 // ids of the requests mcp-guard sends the host

	mu      sync.Mutex
	info    mcp.Implementation
	caps    mcp.ClientCapabilities
	pending map[int64]chan hostResponse // requests to the host awaiting its answer, by id
	subs    map[string]bool             // host URIs subscribed to in a subscriptions/listen
}

// hostResponse is the host's answer to a request mcp-guard sent it.
type hostResponse struct {
	result json.RawMessage
	err    *mcp.JSONRPCErrorDetails
}

var (
	_ server.SessionWithLogging     = (*stdioSession)(nil)
	_ server.SessionWithClientInfo  = (*stdioSession)(nil)
	_ server.SessionWithSampling    = (*stdioSession)(nil)
	_ server.SessionWithElicitation = (*stdioSession)(nil)
	// A 2026-07-28 host subscribes in its subscriptions/listen.
	_ server.SessionWithResourceSubscriptionsErr = (*stdioSession)(nil)
)

func newStdioSession(h *stdioHost) *stdioSession {
	return &stdioSession{h: h, notes: make(chan mcp.JSONRPCNotification, 100), pending: map[int64]chan hostResponse{}, subs: map[string]bool{}}
}

func (s *stdioSession) SessionID() string { return "stdio" }

func (s *stdioSession) NotificationChannel() chan<- mcp.JSONRPCNotification { return s.notes }

func (s *stdioSession) Initialize() {
	s.level.Store(mcp.LoggingLevelError)
	s.initialized.Store(true)
}

func (s *stdioSession) Initialized() bool { return s.initialized.Load() }

func (s *stdioSession) SetLogLevel(level mcp.LoggingLevel) { s.level.Store(level) }

func (s *stdioSession) GetLogLevel() mcp.LoggingLevel {
	if l, ok := s.level.Load().(mcp.LoggingLevel); ok {
		return l
	}
	return mcp.LoggingLevelError
}

func (s *stdioSession) GetClientInfo() mcp.Implementation {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.info
}

func (s *stdioSession) SetClientInfo(info mcp.Implementation) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.info = info
}

func (s *stdioSession) GetClientCapabilities() mcp.ClientCapabilities {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.caps
}

func (s *stdioSession) SetClientCapabilities(caps mcp.ClientCapabilities) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.caps = caps
}

// RequestSampling asks the host for a sampling/createMessage and reads its
// answer as mcp-go would.
func (s *stdioSession) RequestSampling(ctx context.Context, req mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
	raw, failed, err := s.ask(ctx, string(mcp.MethodSamplingCreateMessage), req.CreateMessageParams)
	if err != nil {
		return nil, err
	}
	if failed != nil {
		return nil, fmt.Errorf("sampling request failed: %s", failed.Message)
	}
	var res mcp.CreateMessageResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("failed to unmarshal sampling response: %w", err)
	}
	content, err := mcp.ParseSamplingContent(res.Content)
	if err != nil {
		return nil, fmt.Errorf("failed to parse sampling response content: %w", err)
	}
	res.Content = content
	return &res, nil
}

// RequestElicitation asks the host for an elicitation/create and reads its
// answer as mcp-go would.
func (s *stdioSession) RequestElicitation(ctx context.Context, req mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	raw, failed, err := s.ask(ctx, string(mcp.MethodElicitationCreate), req.Params)
	if err != nil {
		return nil, err
	}
	if failed != nil {
		return nil, fmt.Errorf("elicitation request failed: %s", failed.Message)
	}
	var res mcp.ElicitationResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, fmt.Errorf("failed to unmarshal elicitation response: %w", err)
	}
	return &res, nil
}

// ask sends the host a request of method with params (mcp-go's encoding;
// the host stream puts the server's own params in its place, hostout.go)
// and waits for its answer (a result, or the host's error) or ctx.
func (s *stdioSession) ask(ctx context.Context, method string, params any) (json.RawMessage, *mcp.JSONRPCErrorDetails, error) {
	id := s.nextID.Add(1)
	ch := make(chan hostResponse, 1)
	s.mu.Lock()
	s.pending[id] = ch
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.pending, id)
		s.mu.Unlock()
	}()
	b, err := json.Marshal(struct {
		JSONRPC string `json:"jsonrpc"`
		ID      int64  `json:"id"`
		Method  string `json:"method"`
		Params  any    `json:"params"`
	}{mcp.JSONRPC_VERSION, id, method, params})
	if err != nil {
		return nil, nil, fmt.Errorf("failed to marshal %s request: %w", method, err)
	}
	if _, err := (mcpWriter{s.h}).Write(append(b, '\n')); err != nil {
		return nil, nil, fmt.Errorf("failed to write %s request: %w", method, err)
	}
	select {
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	case r := <-ch:
		return r.result, r.err, nil
	}
}

// answered takes a host's line that answers a request ask sent, and
// reports whether it was one.
func (s *stdioSession) answered(line []byte) bool {
	var r struct {
		ID     json.Number              `json:"id"`
		Method string                   `json:"method"`
		Result json.RawMessage          `json:"result"`
		Error  *mcp.JSONRPCErrorDetails `json:"error"`
	}
	if json.Unmarshal(line, &r) != nil || r.Method != "" || (r.Result == nil && r.Error == nil) {
		return false
	}
	id, err := r.ID.Int64()
	if err != nil {
		return false
	}
	s.mu.Lock()
	ch, ok := s.pending[id]
	s.mu.Unlock()
	if !ok {
		return false
	}
	select {
	case ch <- hostResponse{result: r.Result, err: r.Error}:
	default:
	}
	return true
}

// SubscribeToResourceErr is a host's subscription to a resource as mcp-go
// reports it: in a 2026-07-28 host's subscriptions/listen (and after a
// resources/subscribe, which subscriptions.go has decided already). It is
// decided and forwarded exactly as a resources/subscribe is; refused, the
// host's listen is refused with why.
func (s *stdioSession) SubscribeToResourceErr(uri string) error {
	ctx := s.h.session.Load()
	if ctx == nil {
		return errors.New("mcp-guard: the session is not set up")
	}
	if !s.h.p.subscribed(s.SessionID(), uri) {
		if err := s.h.p.subscribe(*ctx, subParams(uri)); err != nil {
			return err
		}
	}
	s.mu.Lock()
	s.subs[uri] = true
	s.mu.Unlock()
	return nil
}

// SubscribeToResource is SubscribeToResourceErr for a caller that cannot
// be refused; mcp-go calls SubscribeToResourceErr.
func (s *stdioSession) SubscribeToResource(uri string) { _ = s.SubscribeToResourceErr(uri) }

// UnsubscribeFromResource ends the host's subscription (its listen ended,
// or it unsubscribed).
func (s *stdioSession) UnsubscribeFromResource(uri string) {
	s.mu.Lock()
	delete(s.subs, uri)
	s.mu.Unlock()
	if ctx := s.h.session.Load(); ctx != nil {
		_ = s.h.p.unsubscribe(*ctx, subParams(uri))
	}
}

// SubscribedResources are the host URIs the session is subscribed to.
func (s *stdioSession) SubscribedResources() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.subs))
	for u := range s.subs {
		out = append(out, u)
	}
	return out
}

// IsSubscribedToResource reports whether the session is subscribed to uri.
func (s *stdioSession) IsSubscribedToResource(uri string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.subs[uri]
}
