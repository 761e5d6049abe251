package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// subscriberKey carries, in a request's context, the subscriber its
// subscriptions belong to when that is not its host session.
type subscriberKey struct{}

// listen decides the resources a 2026-07-28 HTTP host names in its
// subscriptions/listen as resources/subscribe is decided: each URI by the
// rules, subscribed upstream once however many hosts want it. A refused
// one refuses the listen (what it subscribed before is left again) and
// reaches nothing. An HTTP host's modern request has no session, so the
// listen subscribes as itself, and its updates go to its own stream until
// its request ends. The stdio host's session decides each URI as
// subscriptionsListen reports it (stdiosession.go): listen leaves it to it.
func (p *Proxy) listen(ctx context.Context, params json.RawMessage) error {
	cs := server.ClientSessionFromContext(ctx)
	if _, own := cs.(server.SessionWithResourceSubscriptionsErr); own || cs == nil {
		return nil
	}
	var lp struct {
		Notifications struct {
			ResourceSubscriptions []string `json:"resourceSubscriptions"`
		} `json:"notifications"`
	}
	if json.Unmarshal(params, &lp) != nil || len(lp.Notifications.ResourceSubscriptions) == 0 {
		return nil // nothing to decide
	}
	sid := "listen " + strconv.FormatUint(p.lists.Add(1), 10)
	c := &p.content
	c.mu.Lock()
	if c.listeners == nil {
		c.listeners = map[string]server.ClientSession{}
	}
	c.listeners[sid] = cs
	c.mu.Unlock()
	ended := func() {
		c.mu.Lock()
		delete(c.listeners, sid)
		c.mu.Unlock()
		p.dropSubscriptions(sid)
	}
	lctx := context.WithValue(ctx, subscriberKey{}, sid)
	for _, uri := range lp.Notifications.ResourceSubscriptions {
		if err := p.subscribe(lctx, subParams(uri)); err != nil {
			ended()
			return err
		}
	}
	context.AfterFunc(ctx, ended)
	return nil
}

// toListener sends an update of hostURI to the listen sid, if sid is one,
// and reports whether it was. A listen whose stream is full misses it, as
// a session's would.
func (p *Proxy) toListener(sid, hostURI string) bool {
	p.content.mu.Lock()
	cs := p.content.listeners[sid]
	p.content.mu.Unlock()
	if cs == nil {
		return false
	}
	n := mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION, Notification: mcp.Notification{
		Method: "notifications/resources/updated",
		Params: mcp.NotificationParams{AdditionalFields: map[string]any{"uri": hostURI}},
	}}
	select {
	case cs.NotificationChannel() <- n:
	default:
		p.log.Debug("resources/updated not delivered: the listen's stream is full", "listen", sid)
	}
	return true
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
	cs := server.ClientSessionFromContext(ctx)
	if cs == nil {
		return nil, &rpcError{mcp.INTERNAL_ERROR, "subscriptions/listen requires a session"}
	}
	allowed := ps.Notifications
	if f, ok := cs.(server.SessionWithSubscriptionFilter); ok {
		f.SetSubscriptionFilter(allowed)
		defer f.SetSubscriptionFilter(mcp.SubscriptionFilter{})
	}
	if subs, ok := cs.(server.SessionWithResourceSubscriptionsErr); ok {
		// The stdio host's session decides each URI (stdiosession.go).
		var established []string
		defer func() {
			for _, uri := range established {
				subs.UnsubscribeFromResource(uri)
			}
		}()
		for _, uri := range allowed.ResourceSubscriptions {
			if err := subs.SubscribeToResourceErr(uri); err != nil {
				return nil, &rpcError{mcp.INVALID_PARAMS, fmt.Sprintf("subscribing to %q: %v", uri, err)}
			}
			established = append(established, uri)
		}
	} else if err := p.listen(ctx, r.Params); err != nil {
		return nil, &rpcError{mcp.INVALID_PARAMS, err.Error()}
	}
	var id any
	_ = json.Unmarshal(r.ID, &id)
	ack := mcp.JSONRPCNotification{JSONRPC: mcp.JSONRPC_VERSION, Notification: mcp.Notification{
		Method: string(mcp.MethodNotificationSubscriptionsAcknowledged),
		Params: mcp.NotificationParams{Meta: map[string]any{mcp.MetaKeySubscriptionID: id}, AdditionalFields: map[string]any{"notifications": allowed}},
	}}
	select {
	case cs.NotificationChannel() <- ack:
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
	if !allowed.IsEmpty() {
		<-ctx.Done()
	}
	meta, _ := json.Marshal(map[string]any{mcp.MetaKeySubscriptionID: id})
	return json.RawMessage(`{"_meta":` + string(meta) + `}`), nil
}
