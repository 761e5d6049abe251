package proxy

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
)

// listen decides the resources a 2026-07-28 HTTP host names in its
// subscriptions/listen as resources/subscribe is decided: each URI by the
// rules, subscribed upstream once however many hosts want it. A refused
// one refuses the listen (what it subscribed before is left again) and
// reaches nothing. The listen's connection is the subscriber: its updates
// go to its stream until its request ends, and its subscriptions end with
// it (disconnect). The stdio host's connection decides each URI as
// subscriptionsListen reports it (stdiosession.go): listen leaves it to it.
func (p *Proxy) listen(ctx context.Context, params json.RawMessage) error {
	c := connOf(ctx)
	if _, own := c.(subscriberConn); own || c == nil {
		return nil
	}
	var lp struct {
		Notifications struct {
			ResourceSubscriptions []string `json:"resourceSubscriptions"`
		} `json:"notifications"`
	}
	if json.Unmarshal(params, &lp) != nil {
		return nil // nothing to decide
	}
	for _, uri := range lp.Notifications.ResourceSubscriptions {
		if err := p.subscribe(ctx, subParams(uri)); err != nil {
			p.dropSubscriptions(c.connID())
			return err
		}
	}
	return nil
}

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
	allowed := ps.Notifications
	if f, ok := c.(filteredConn); ok {
		f.setFilter(allowed)
		defer f.setFilter(mcp.SubscriptionFilter{})
	}
	if subs, ok := c.(subscriberConn); ok {
		// The stdio host's connection decides each URI (stdiosession.go).
		var established []string
		defer func() {
			for _, uri := range established {
				subs.unsubscribeFrom(uri)
			}
		}()
		for _, uri := range allowed.ResourceSubscriptions {
			if err := subs.subscribeTo(uri); err != nil {
				return nil, &rpcError{mcp.INVALID_PARAMS, fmt.Sprintf("subscribing to %q: %v", uri, err)}
			}
			established = append(established, uri)
		}
	} else if err := p.listen(ctx, r.Params); err != nil {
		return nil, &rpcError{mcp.INVALID_PARAMS, err.Error()}
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
