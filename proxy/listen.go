package proxy

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
)

// subscriptionsListen answers a 2026-07-28 host's subscriptions/listen: the
// notifications it opts in to (mcp-guard offers every kind), each resource
// it names decided and subscribed as a resources/subscribe is, then the
// acknowledgement on the listen's stream. The request is held open while
// anything was opted in to, and answered when the host ends it; what it
// subscribed ends with it.
func (p *Proxy) subscriptionsListen(ctx context.Context, r *hostRequest) (json.RawMessage, error) {
	if !r.modern {
		return nil, &rpcError{mcp.METHOD_NOT_FOUND, `"subscriptions/listen" requires protocol version ` + mcp.ProtocolVersion20260728 + " or later"}
	}
	var ps mcp.SubscriptionsListenParams
	if err := readParams(r, &ps); err != nil {
		return nil, err
	}
	c := connOf(ctx)
	if c == nil {
		return nil, &rpcError{mcp.INTERNAL_ERROR, "subscriptions/listen requires a session"}
	}
	if lc, ok := c.(listensConn); ok {
		// The listen is a connection of its own on the host's stream.
		c = lc.listenConn(r.ID)
		if err := p.connect(c); err != nil {
			return nil, &rpcError{mcp.INVALID_REQUEST, "subscriptions/listen: " + err.Error()}
		}
		defer p.disconnect(c)
		ctx = withConn(ctx, c)
	}
	allowed := ps.Notifications
	if f, ok := c.(filteredConn); ok {
		f.setFilter(allowed)
		defer f.setFilter(mcp.SubscriptionFilter{})
	}
	// Each resource named is decided and subscribed as a
	// resources/subscribe is, by the listen's connection (a 2026-07-28
	// HTTP listen's own stream; on stdio, the listen's own connection on
	// the host's stream); a refused one refuses the listen. What it
	// subscribed ends with it: the connection's end drops its
	// subscriptions (disconnect).
	for _, uri := range allowed.ResourceSubscriptions {
		if err := p.subscribe(ctx, subParams(uri)); err != nil {
			return nil, &rpcError{mcp.INVALID_PARAMS, fmt.Sprintf("subscribing to %q: %v", uri, err)}
		}
	}
	meta := `{"_meta":{"` + mcp.MetaKeySubscriptionID + `":` + string(r.ID) + `}}`
	opted, err := json.Marshal(allowed)
	if err != nil {
		return nil, fmt.Errorf("subscriptions/listen: %w", err)
	}
	ack, _ := setMember([]byte(meta), "notifications", opted)
	if err := notifyHost(ctx, string(mcp.MethodNotificationSubscriptionsAcknowledged), ack); err != nil {
		return nil, &rpcError{mcp.INTERNAL_ERROR, "subscriptions/listen: the acknowledgement could not be sent: " + err.Error()}
	}
	if !allowed.IsEmpty() {
		<-ctx.Done()
	}
	return json.RawMessage(meta), nil
}
