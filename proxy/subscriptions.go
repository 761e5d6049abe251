package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-guard/mcp-guard/gate"
	"github.com/mcp-guard/mcp-guard/pin"
)

// A host subscribes to a host URI (gate.HostURI). mcp-guard checks it and
// subscribes upstream once per upstream URI, however many host sessions
// want it; it relays the upstream's notifications/resources/updated for
// that URI to exactly the host sessions that subscribed, under the host
// URI; the last session to unsubscribe (or to end) unsubscribes upstream.
// After an upstream reconnects, its subscriptions are sent again.

type subKey struct{ server, uri string } // uri: the upstream's

type subscription struct {
	sessions map[string]bool // host session IDs
	sentTo   *upstream       // the connection the upstream subscribe went to
}

func paramURI(params json.RawMessage) string {
	var p struct {
		URI string `json:"uri"`
	}
	_ = json.Unmarshal(params, &p)
	return p.URI
}

// sessionID is the subscriber a host request subscribes as: its host's
// connection (a 2026-07-28 listen's is its own).
func sessionID(ctx context.Context) string {
	if c := connOf(ctx); c != nil {
		return c.connID()
	}
	return "stdio"
}

// subscribe admits a resources/subscribe only for a URI the host can read:
// an exposed resource or a URI an exposed template produces, which the
// resource rules allow, of a server that offers subscriptions. An error
// refuses the host's request; nothing reaches the upstream then.
func (p *Proxy) subscribe(ctx context.Context, params json.RawMessage) error {
	hostURI := paramURI(params)
	if hostURI == "" {
		return nil // resourcesSubscribe refused it
	}
	srv, uri, ok := p.upstreamURI(hostURI)
	if !ok || !p.reachable(srv, hostURI) {
		p.log.Warn("subscription refused: not an exposed resource", "uri", truncate(hostURI, 200))
		return fmt.Errorf("mcp-guard: no subscription to %q: it is neither a resource mcp-guard exposes nor a URI of one of its templates", hostURI)
	}
	r := gate.Request{Kind: gate.KindSubscribe, Server: srv, Name: uri, Exposed: hostURI}
	res := p.pipe.Run(ctx, &r, gate.ForwardFunc(func(ctx context.Context, _ int64, _ func(json.RawMessage, error)) (json.RawMessage, error) {
		return nil, p.subscribeUpstream(ctx, srv, uri, hostURI)
	}))
	switch res.Status {
	case gate.Done:
		return nil
	case gate.Refused:
		p.log.Warn("subscription refused", "uri", truncate(hostURI, 200), "rule", res.Decision.Rule, "reason", res.Decision.Reason)
		return errors.New(res.Message)
	}
	return res.Err
}

// subscribeUpstream subscribes upstream to uri, once per upstream URI
// however many host sessions want it, and adds this host session to its
// subscribers.
func (p *Proxy) subscribeUpstream(ctx context.Context, srv, uri, hostURI string) error {
	u := p.upstream(srv)
	if u == nil {
		return fmt.Errorf("mcp-guard: no subscription to %s: upstream %q is not connected", hostURI, srv)
	}
	if !u.Content().Subscribe {
		return fmt.Errorf("mcp-guard: no subscription to %s: %s does not offer resource subscriptions", hostURI, srv)
	}
	c := &p.content
	c.subMu.Lock()
	defer c.subMu.Unlock()
	key := subKey{srv, uri}
	c.mu.Lock()
	s := c.subs[key]
	c.mu.Unlock()
	if s == nil || s.sentTo != u {
		if _, err := u.Request(ctx, "resources/subscribe", subParams(uri), nil); err != nil {
			p.log.Warn("resources/subscribe failed", "server", srv, "uri", uri, "err", err)
			return fmt.Errorf("mcp-guard: no subscription to %s: %s", hostURI, hostReason(err))
		}
	}
	c.mu.Lock()
	if c.subs == nil {
		c.subs = map[subKey]*subscription{}
	}
	if s = c.subs[key]; s == nil {
		s = &subscription{sessions: map[string]bool{}}
		c.subs[key] = s
	}
	s.sessions[sessionID(ctx)], s.sentTo = true, u
	c.mu.Unlock()
	p.log.Info("subscribed", "uri", truncate(hostURI, 200), "session", sessionID(ctx))
	return nil
}

// reachable reports whether hostURI is an exposed resource of srv or a URI
// one of srv's exposed templates produces.
func (p *Proxy) reachable(srv, hostURI string) bool {
	e, ok, _ := p.readable(hostURI)
	return ok && e.Server == srv
}

// readable is what a read of hostURI reads: the exposed resource of that
// URI, or else the first of its server's exposed templates, in the order
// they were listed, that produces it. A listed resource that is withheld
// is not read through a template: withheld then says why it is withheld.
func (p *Proxy) readable(hostURI string) (e gate.ExposedItem, ok bool, withheld string) {
	srv, _, ok := p.upstreamURI(hostURI)
	if !ok {
		return gate.ExposedItem{}, false, ""
	}
	v := p.contentView()
	if v == nil {
		return gate.ExposedItem{}, false, ""
	}
	if e, ok := v.Exposed[pin.Resources][hostURI]; ok {
		return e, e.Server == srv, ""
	}
	for _, r := range v.Report {
		e, ok := v.Exposed[pin.Templates][r.Exposed]
		if r.Kind != pin.Templates.Noun() || !ok || e.Server != srv {
			continue
		}
		if t, err := uriTemplate(e.Host); err == nil && t.Regexp().MatchString(hostURI) {
			if h, hidden := v.Hidden[pin.Resources][hostURI]; hidden {
				return gate.ExposedItem{}, false, h.Why
			}
			return e, true, ""
		}
	}
	return gate.ExposedItem{}, false, ""
}

func subParams(uri string) json.RawMessage {
	return json.RawMessage(`{"uri":` + string(jsonString(uri)) + `}`)
}

// unsubscribe ends this host session's subscription; the last one ends the
// upstream's. It never refuses.
func (p *Proxy) unsubscribe(ctx context.Context, params json.RawMessage) error {
	srv, uri, ok := p.upstreamURI(paramURI(params))
	if !ok {
		return nil
	}
	p.content.subMu.Lock()
	defer p.content.subMu.Unlock()
	p.leave(ctx, subKey{srv, uri}, sessionID(ctx))
	return nil
}

// leave removes a session from a subscription (under subMu); the last one
// out unsubscribes upstream, best effort.
func (p *Proxy) leave(ctx context.Context, key subKey, sid string) {
	c := &p.content
	c.mu.Lock()
	s := c.subs[key]
	if s == nil || !s.sessions[sid] {
		c.mu.Unlock()
		return
	}
	delete(s.sessions, sid)
	last := len(s.sessions) == 0
	if last {
		delete(c.subs, key)
	}
	c.mu.Unlock()
	if u := p.upstream(key.server); last && u != nil && u == s.sentTo {
		if _, err := u.Request(ctx, "resources/unsubscribe", subParams(key.uri), nil); err != nil {
			p.log.Warn("upstream unsubscribe failed", "server", key.server, "uri", truncate(key.uri, 200), "err", err)
		}
	}
}

// dropSubscriptions ends every subscription of a host session that ended.
func (p *Proxy) dropSubscriptions(sid string) {
	c := &p.content
	c.subMu.Lock()
	defer c.subMu.Unlock()
	c.mu.Lock()
	var keys []subKey
	for k, s := range c.subs {
		if s.sessions[sid] {
			keys = append(keys, k)
		}
	}
	c.mu.Unlock()
	for _, k := range keys {
		ctx, cancel := context.WithTimeout(context.Background(), recordTimeout)
		p.leave(ctx, k, sid)
		cancel()
	}
}

// resubscribe sends an upstream that connected again the subscriptions its
// earlier connection had.
func (p *Proxy) resubscribe(ctx context.Context, u *upstream) {
	c := &p.content
	c.subMu.Lock()
	defer c.subMu.Unlock()
	c.mu.Lock()
	var keys []subKey
	for k, s := range c.subs {
		if k.server == u.name && s.sentTo != u {
			keys = append(keys, k)
		}
	}
	c.mu.Unlock()
	for _, k := range keys {
		if _, err := u.Request(ctx, "resources/subscribe", subParams(k.uri), nil); err != nil {
			p.log.Warn("subscription not renewed after reconnecting", "server", u.name, "uri", truncate(k.uri, 200), "err", err)
			continue
		}
		c.mu.Lock()
		if s := c.subs[k]; s != nil {
			s.sentTo = u
		}
		c.mu.Unlock()
	}
}

// relayUpdates passes an upstream's notifications/resources/updated to the
// host sessions subscribed to that URI, under its host URI, until the
// upstream ends. An update nobody subscribed to goes nowhere.
func (p *Proxy) relayUpdates(u *upstream) {
	c := &p.content
	defer func() {
		c.mu.Lock()
		delete(c.relaying, u)
		c.mu.Unlock()
	}()
	for {
		select {
		case <-u.Done():
			return
		case uri := <-u.Updated():
			c.mu.Lock()
			var sids []string
			if s := c.subs[subKey{u.name, uri}]; s != nil {
				for sid := range s.sessions {
					sids = append(sids, sid)
				}
			}
			c.mu.Unlock()
			if len(sids) == 0 {
				p.log.Debug("resources/updated for a URI no host subscribed to; dropped", "server", u.name, "uri", truncate(uri, 200))
				continue
			}
			host := gate.HostURI(u.name, uri)
			for _, sid := range sids {
				if err := p.conns.send(sid, "notifications/resources/updated", updatedParams(host)); err != nil {
					p.log.Debug("resources/updated not delivered", "session", sid, "err", err)
				}
			}
		}
	}
}

// updatedParams are the params of a resources/updated for the host URI.
func updatedParams(hostURI string) json.RawMessage {
	return json.RawMessage(`{"uri":` + string(jsonString(hostURI)) + `}`)
}

// resourcesSubscribe answers resources/subscribe: the URI decided and
// subscribed upstream for the host's connection (subscribe). A 2026-07-28
// host subscribes in its subscriptions/listen instead: its
// resources/subscribe is refused, and nothing is subscribed.
func (p *Proxy) resourcesSubscribe(ctx context.Context, r *hostRequest) (json.RawMessage, error) {
	if _, err := subscribeURI(r); err != nil {
		return nil, err
	}
	if err := p.subscribe(ctx, r.Params); err != nil {
		return nil, &rpcError{mcp.INVALID_PARAMS, err.Error()}
	}
	return json.RawMessage(`{}`), nil
}

// resourcesUnsubscribe answers resources/unsubscribe: the host
// connection's subscription ends, and the last one's upstream. It never
// refuses a URI.
func (p *Proxy) resourcesUnsubscribe(ctx context.Context, r *hostRequest) (json.RawMessage, error) {
	if _, err := subscribeURI(r); err != nil {
		return nil, err
	}
	_ = p.unsubscribe(ctx, r.Params)
	return json.RawMessage(`{}`), nil
}

// subscribeURI is the URI a resources/subscribe or unsubscribe names; a
// 2026-07-28 request of either is refused, as one with no URI.
func subscribeURI(r *hostRequest) (string, error) {
	if r.modern {
		return "", removed(r.Method)
	}
	var ps struct {
		URI string `json:"uri"`
	}
	if err := readParams(r, &ps); err != nil {
		return "", err
	}
	if ps.URI == "" {
		return "", &rpcError{mcp.INVALID_PARAMS, r.Method + ": uri is required"}
	}
	return ps.URI, nil
}
