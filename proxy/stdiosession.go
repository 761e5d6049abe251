package proxy

import (
	"context"
	"encoding/json"

	"github.com/mark3labs/mcp-go/mcp"
)

// stdioSession is the stdio host's connection (hostConn): what it keeps
// of its host and what mcp-guard asks it (hostpeer.go). Each ServeStdio
// has its own.
type stdioSession struct {
	hostPeer
	h *stdioHost
}

var (
	_ hostConn  = (*stdioSession)(nil)
	_ hostAsker = (*stdioSession)(nil)
)

func newStdioSession(h *stdioHost) *stdioSession {
	return &stdioSession{h: h}
}

func (s *stdioSession) connID() string { return "stdio" }

// queue writes a notification on the host's stream.
func (s *stdioSession) queue(method string, params json.RawMessage) error {
	_, err := s.h.out.Write(append(notificationLine(method, params), '\n'))
	return err
}

// askHost asks the host a request of method with params, as they are.
func (s *stdioSession) askHost(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, *mcp.JSONRPCErrorDetails, error) {
	return s.ask(ctx, method, params, s.send, func(id int64) { s.h.p.withdrawn(ctx, id) })
}

// send writes a request to the host's stream.
func (s *stdioSession) send(_ context.Context, _ string, line []byte) error {
	_, err := s.h.out.Write(append(line, '\n'))
	return err
}
