package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"

	up "github.com/mcp-guard/mcp-guard/upstream"
)

// A host cancels a request with notifications/cancelled. The receiver of a
// cancellation does not answer the request (MCP), and the server serving
// it is told with the host's own reason. Each host transport reads the
// notification first (stdiohost.go, httppost.go) and calls
// hostCancel: the request's context ends with an up.HostCancelled cause,
// which the upstream client turns into its notifications/cancelled, and
// the transport drops whatever answer is written for the request after.

// reqKey names one host request: its host session and its id, as mcp-go
// decodes ids (a JSON number and a JSON string of the same digits differ).
type reqKey struct {
	session string
	id      string
}

// idKey is the key form of a request id decoded as mcp-go decodes it.
func idKey(id any) string { return fmt.Sprintf("%T:%v", id, id) }

// rawIDKey is idKey of a raw JSON id; ok is false when raw is no id.
func rawIDKey(raw json.RawMessage) (string, bool) {
	var id any
	if len(raw) == 0 || json.Unmarshal(raw, &id) != nil || id == nil {
		return "", false
	}
	switch id.(type) {
	case string, float64:
		return idKey(id), true
	}
	return "", false
}

// cancelBook is every host request in flight that can be cancelled with a
// reason. Its zero value is ready.
type cancelBook struct {
	mu      sync.Mutex
	cancels map[reqKey]context.CancelCauseFunc
}

// cancellable returns ctx, cancellable by the host with its reason as the
// request key, and the func that ends it.
func (b *cancelBook) cancellable(ctx context.Context, key *reqKey) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	b.mu.Lock()
	if b.cancels == nil {
		b.cancels = map[reqKey]context.CancelCauseFunc{}
	}
	if _, dup := b.cancels[*key]; dup {
		// Two requests in flight under one id: which one a cancellation
		// means cannot be told: both are cancelled.
		b.mu.Unlock()
		return ctx, func() { cancel(nil) }
	}
	b.cancels[*key] = cancel
	b.mu.Unlock()
	k := *key
	return ctx, func() {
		b.mu.Lock()
		delete(b.cancels, k)
		b.mu.Unlock()
		cancel(nil)
	}
}

// hostCancel ends the request key names, if it is in flight, with the
// host's reason as its cause.
func (b *cancelBook) hostCancel(key reqKey, reason *up.HostCancelled) {
	b.mu.Lock()
	cancel := b.cancels[key]
	b.mu.Unlock()
	if cancel != nil {
		cancel(reason)
	}
}

// cancelNote is a host's notifications/cancelled, read.
type cancelNote struct {
	id     string // idKey of the request
	reason *up.HostCancelled
}

// parseCancelled reads msg as a notifications/cancelled; ok is false for
// any other message.
func parseCancelled(msg []byte) (cancelNote, bool) {
	var n struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			RequestID json.RawMessage `json:"requestId"`
			Reason    *string         `json:"reason"`
		} `json:"params"`
	}
	if json.Unmarshal(msg, &n) != nil || n.Method != string(mcp.MethodNotificationCancelled) || n.ID != nil {
		return cancelNote{}, false
	}
	id, ok := rawIDKey(n.Params.RequestID)
	if !ok {
		return cancelNote{}, false
	}
	c := cancelNote{id: id, reason: &up.HostCancelled{}}
	if n.Params.Reason != nil {
		c.reason.Reason, c.reason.HasReason = *n.Params.Reason, true
	}
	return c, true
}

// cancelledByHost reports whether ctx ended because the host cancelled
// its request.
func cancelledByHost(ctx context.Context) bool {
	_, ok := context.Cause(ctx).(*up.HostCancelled)
	return ok
}
