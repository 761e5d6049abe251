package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/mark3labs/mcp-go/mcp"
)

// hostPeer is what every host session keeps of its host, whatever carries
// it (stdiosession.go, httpsession.go): its identity, capabilities and log
// level as mcp-go's server sets them, and the requests mcp-guard sent it
// that wait for its answer.
type hostPeer struct {
	initialized atomic.Bool
	level       atomic.Value // mcp.LoggingLevel
	nextID      atomic.Int64 // ids of the requests mcp-guard sends the host

	mu      sync.Mutex
	info    mcp.Implementation
	caps    mcp.ClientCapabilities
	pending map[int64]chan hostResponse // requests to the host awaiting its answer, by id
}

// hostResponse is the host's answer to a request mcp-guard sent it.
type hostResponse struct {
	result json.RawMessage
	err    *mcp.JSONRPCErrorDetails
}

func (s *hostPeer) Initialize() {
	s.level.Store(mcp.LoggingLevelError)
	s.initialized.Store(true)
}

func (s *hostPeer) Initialized() bool { return s.initialized.Load() }

func (s *hostPeer) SetLogLevel(level mcp.LoggingLevel) { s.level.Store(level) }

func (s *hostPeer) GetLogLevel() mcp.LoggingLevel {
	if l, ok := s.level.Load().(mcp.LoggingLevel); ok {
		return l
	}
	return mcp.LoggingLevelError
}

func (s *hostPeer) GetClientInfo() mcp.Implementation {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.info
}

func (s *hostPeer) SetClientInfo(info mcp.Implementation) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.info = info
}

func (s *hostPeer) GetClientCapabilities() mcp.ClientCapabilities {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.caps
}

func (s *hostPeer) SetClientCapabilities(caps mcp.ClientCapabilities) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.caps = caps
}

// sendFunc writes one request line (mcp-go's encoding of its params) to
// the host; the host stream puts the server's own params in its place
// (hostout.go).
type sendFunc func(ctx context.Context, method string, line []byte) error

// sampling asks the host for a sampling/createMessage and reads its answer
// as mcp-go would.
func (s *hostPeer) sampling(ctx context.Context, req mcp.CreateMessageRequest, send sendFunc) (*mcp.CreateMessageResult, error) {
	raw, failed, err := s.ask(ctx, string(mcp.MethodSamplingCreateMessage), req.CreateMessageParams, send)
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

// elicitation asks the host for an elicitation/create and reads its
// answer as mcp-go would.
func (s *hostPeer) elicitation(ctx context.Context, req mcp.ElicitationRequest, send sendFunc) (*mcp.ElicitationResult, error) {
	raw, failed, err := s.ask(ctx, string(mcp.MethodElicitationCreate), req.Params, send)
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

// ask sends the host a request of method with params and waits for its
// answer (a result, or the host's error) or ctx.
func (s *hostPeer) ask(ctx context.Context, method string, params any, send sendFunc) (json.RawMessage, *mcp.JSONRPCErrorDetails, error) {
	id := s.nextID.Add(1)
	ch := make(chan hostResponse, 1)
	s.mu.Lock()
	if s.pending == nil {
		s.pending = map[int64]chan hostResponse{}
	}
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
	if err := send(ctx, method, b); err != nil {
		return nil, nil, fmt.Errorf("failed to write %s request: %w", method, err)
	}
	select {
	case <-ctx.Done():
		return nil, nil, ctx.Err()
	case r := <-ch:
		return r.result, r.err, nil
	}
}

// answered takes a host's message that answers a request ask sent, and
// reports whether it was one.
func (s *hostPeer) answered(msg []byte) bool {
	var r struct {
		ID     json.Number              `json:"id"`
		Method string                   `json:"method"`
		Result json.RawMessage          `json:"result"`
		Error  *mcp.JSONRPCErrorDetails `json:"error"`
	}
	if json.Unmarshal(msg, &r) != nil || r.Method != "" || (r.Result == nil && r.Error == nil) {
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
