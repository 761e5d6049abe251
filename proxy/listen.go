package proxy

import (
	"context"
	"encoding/json"
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
// its request ends. The stdio host's session decides each URI as mcp-go
// reports it (stdiosession.go): listen leaves it to it.
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
		return nil // mcp-go answers what it cannot read; nothing to decide
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
