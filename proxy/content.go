package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcp-guard/mcp-guard/gate"
	"github.com/mcp-guard/mcp-guard/pin"
	up "github.com/mcp-guard/mcp-guard/upstream"
)

// Prompts, resources and resource templates get the treatment tools get:
// each upstream's listings are walked (every page, within the tools/list
// caps) and each item pinned from its exact bytes under the pin name
// "prompt:NAME", "resource:URI" or "template:URI-TEMPLATE"; an item whose
// text fails the checks, that its server lists twice, whose pin is not
// pinned as it is now, whose server's instructions are held, or that no
// rule covers is never shown. Prompts are shown as <server>__<prompt>;
// resources and templates under mcp-guard URIs (see HostURI).

// itemKinds are the listings besides tools, in the order they are listed.
var itemKinds = [...]pin.ItemKind{pin.Prompts, pin.Resources, pin.Templates}

// offers says whether caps include the listing of kind.
func offers(c up.ContentCaps, k pin.ItemKind) bool {
	if k == pin.Prompts {
		return c.Prompts
	}
	return c.Resources
}

// listItems walks every page of one listing, refusing cursor loops and
// results over the tools/list page and byte caps.
func listItems(ctx context.Context, u *upstream, kind pin.ItemKind) ([]pin.Item, error) {
	var items []pin.Item
	err := u.List(ctx, kind.Method(), func(res json.RawMessage) (string, error) {
		pg, err := pin.SplitItems(kind, res)
		if err != nil {
			return "", err
		}
		items = append(items, pg.Items...)
		return pg.NextCursor, nil
	})
	if err != nil {
		return nil, err
	}
	return items, nil
}

// contentState is what the proxy knows of its upstreams' prompts and
// resources and what the host is shown of them. Its zero value is ready.
type contentState struct {
	mu       sync.Mutex
	live     map[string]contentListing // each upstream's latest listings
	view     *contentView
	relaying map[*upstream]bool // upstreams whose resources/updated are relayed

	subMu sync.Mutex // one subscribe or unsubscribe at a time (subscriptions.go)
	subs  map[subKey]*subscription
}

// contentListing is what one upstream listed at its latest relist.
type contentListing struct {
	items map[pin.ItemKind][]pin.Item
	errs  map[pin.ItemKind]error // listings that failed: nothing of that kind is exposed
	dups  map[pin.ItemKind]map[string]bool
}

// exposedItem is one prompt, resource or template as the host sees it.
type exposedItem struct {
	server string
	item   pin.Item
	host   string // the exposed prompt name, host URI or host URI template
	// What mcp-go lists to the host: the one of its kind.
	prompt   mcp.Prompt
	resource mcp.Resource
	template mcp.ResourceTemplate
}

// hostName is what the host sees an item as: a prompt under its own name
// when bare (namespace = false); a resource or template always under its
// host URI, which says which server it is of.
func hostName(server string, it pin.Item, bare bool) string {
	if it.Kind == pin.Prompts {
		if bare {
			return it.Key
		}
		return ExposedName(server, it.Key)
	}
	return HostURI(server, it.Key)
}

// relistContent lists an upstream's prompts, resources and templates (what
// its capabilities offer), pins what passes the checks (what was never seen
// only when trust says why, as for its tools: trustNew), and starts relaying
// its resources/updated. A listing that fails leaves that kind unexposed.
func (p *Proxy) relistContent(ctx context.Context, u *upstream, trust string) {
	l := contentListing{items: map[pin.ItemKind][]pin.Item{}, errs: map[pin.ItemKind]error{}, dups: map[pin.ItemKind]map[string]bool{}}
	for _, kind := range itemKinds {
		if !offers(u.Content(), kind) {
			continue
		}
		lctx, cancel := context.WithTimeout(ctx, p.opts.Limits.StartTimeout)
		items, err := listItems(lctx, u, kind)
		cancel()
		if err != nil {
			l.errs[kind] = err
			p.log.Error("upstream listing failed; none of what it lists is exposed", "server", u.name, "method", kind.Method(), "err", err)
			continue
		}
		l.items[kind] = items
		keys := make([]string, len(items))
		for i, it := range items {
			keys[i] = it.Key
		}
		l.dups[kind] = gate.Duplicates(keys)
	}
	if !p.opts.DryRun {
		for _, kind := range itemKinds {
			for _, it := range l.items[kind] {
				if gate.CheckItem(it, parseTemplate) != "" || l.dups[kind][it.Key] {
					continue
				}
				if _, err := p.opts.Ledger.ObservePinAs(ctx, u.name, kind.PinName(it.Key), it.Digest(), p.pinRaw(it.Raw), trust); err != nil {
					p.log.Error("not pinned", "server", u.name, kind.Noun(), it.Key, "err", err)
				}
			}
		}
	}
	c := &p.content
	c.mu.Lock()
	if c.live == nil {
		c.live, c.relaying = map[string]contentListing{}, map[*upstream]bool{}
	}
	c.live[u.name] = l
	start := u.Content().Resources && !c.relaying[u]
	if start {
		c.relaying[u] = true
	}
	c.mu.Unlock()
	if start {
		go p.relayUpdates(u)
	}
	p.resubscribe(ctx, u)
}

// parseTemplate reports whether s parses as an RFC 6570 template, by
// mcp-go's own parser (gate.CheckItem's).
func parseTemplate(s string) error {
	_, err := uriTemplate(s)
	return err
}

// uriTemplate parses an RFC 6570 template with mcp-go's own parser.
func uriTemplate(s string) (*mcp.URITemplate, error) {
	var t mcp.URITemplate
	if err := json.Unmarshal(jsonString(s), &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// showContent gives the hosts each list of prompts, resources or
// templates that differs from what they were shown, in one batch each (one
// list_changed each).
func (p *Proxy) showContent(old, v *contentView) {
	p.content.mu.Lock()
	p.content.view = v
	p.content.mu.Unlock()
	changed := func(k pin.ItemKind) bool {
		if old == nil {
			return v.sig[k] != ""
		}
		return old.sig[k] != v.sig[k]
	}
	// One batch per list, in the order of the reports.
	var prompts []server.ServerPrompt
	var resources []server.ServerResource
	var templates []server.ServerResourceTemplate
	for _, r := range v.report {
		for _, kind := range itemKinds {
			e, ok := v.exposed[kind][r.Exposed]
			if !ok || kind.Noun() != r.Kind {
				continue
			}
			switch kind {
			case pin.Prompts:
				prompts = append(prompts, server.ServerPrompt{Prompt: e.prompt, Handler: p.promptHandler(e)})
			case pin.Resources:
				resources = append(resources, server.ServerResource{Resource: e.resource, Handler: p.resourceHandler(e)})
			case pin.Templates:
				templates = append(templates, server.ServerResourceTemplate{Template: e.template, Handler: server.ResourceTemplateHandlerFunc(p.resourceHandler(e))})
			}
		}
	}
	if changed(pin.Prompts) {
		p.srv.SetPrompts(prompts...)
	}
	if changed(pin.Resources) {
		p.srv.SetResources(resources...)
	}
	if changed(pin.Templates) {
		p.srv.SetResourceTemplates(templates...)
	}
	if changed(pin.Prompts) || changed(pin.Resources) || changed(pin.Templates) {
		for _, r := range v.report {
			if r.Hidden != "" {
				p.log.Info(r.Kind+" not exposed", "server", r.Server, r.Kind, r.Key, "reason", r.Hidden)
			}
		}
		p.log.Info("prompts and resources exposed", "prompts", len(v.exposed[pin.Prompts]), "resources", len(v.exposed[pin.Resources]), "templates", len(v.exposed[pin.Templates]))
	}
}

// currentItem returns the exposed item of that kind and host name in the
// current view.
func (p *Proxy) currentItem(kind pin.ItemKind, host string) (exposedItem, bool) {
	p.content.mu.Lock()
	defer p.content.mu.Unlock()
	if p.content.view == nil {
		return exposedItem{}, false
	}
	e, ok := p.content.view.exposed[kind][host]
	return e, ok
}

// hiddenItem says why an item the host names is not exposed, if it is a
// listed item at all.
func (p *Proxy) hiddenItem(kind pin.ItemKind, host string) (hiddenItem, bool) {
	p.content.mu.Lock()
	defer p.content.mu.Unlock()
	if p.content.view == nil {
		return hiddenItem{}, false
	}
	h, ok := p.content.view.hidden[kind][host]
	return h, ok
}

// Items reports every prompt, resource and template the upstreams listed
// and what became of it.
func (p *Proxy) Items() []ItemReport {
	p.content.mu.Lock()
	defer p.content.mu.Unlock()
	if p.content.view == nil {
		return nil
	}
	return p.content.view.report
}

// ItemsFailed reports the listings of prompts, resources or templates that
// failed, as "server: method: error".
func (p *Proxy) ItemsFailed() []string {
	p.content.mu.Lock()
	defer p.content.mu.Unlock()
	if p.content.view == nil {
		return nil
	}
	return p.content.view.failed
}

// hostPrompt builds the prompt the host sees from the upstream's raw
// definition. mcp-go re-encodes it; what is pinned is the raw bytes.
func hostPrompt(e exposedItem) (mcp.Prompt, error) {
	var pr mcp.Prompt
	if err := json.Unmarshal(e.item.Raw, &pr); err != nil {
		return mcp.Prompt{}, err
	}
	pr.Name = e.host
	return pr, nil
}

func hostResource(e exposedItem) (mcp.Resource, error) {
	var rs mcp.Resource
	if err := json.Unmarshal(e.item.Raw, &rs); err != nil {
		return mcp.Resource{}, err
	}
	rs.URI = e.host
	return rs, nil
}

func hostTemplate(e exposedItem) (mcp.ResourceTemplate, error) {
	var tm mcp.ResourceTemplate
	if err := json.Unmarshal(e.item.Raw, &tm); err != nil {
		return mcp.ResourceTemplate{}, err
	}
	t, err := uriTemplate(e.host)
	if err != nil {
		return mcp.ResourceTemplate{}, err
	}
	tm.URITemplate = t
	return tm, nil
}

// contentHooks registers what prompts and resources need of the host-facing
// server's hooks: strict prompt arguments and subscriptions before mcp-go
// handles a request, records of gets and reads of names nothing exposes,
// and a host session's subscriptions ending with it.
func (p *Proxy) contentHooks(hooks *server.Hooks) {
	hooks.AddOnRequestInitialization(p.onContentRequest)
	hooks.AddOnError(func(ctx context.Context, _ any, method mcp.MCPMethod, message any, err error) {
		switch {
		case method == mcp.MethodPromptsGet && errors.Is(err, server.ErrPromptNotFound):
			if r, ok := message.(*mcp.GetPromptRequest); ok {
				args, _ := promptArgs(r.Params.Arguments)
				p.recordUnknownItem(ctx, pin.Prompts, r.Params.Name, args)
			}
		case method == mcp.MethodResourcesRead && errors.Is(err, server.ErrResourceNotFound):
			if r, ok := message.(*mcp.ReadResourceRequest); ok {
				p.recordUnknownItem(ctx, pin.Resources, r.Params.URI, nil)
			}
		}
	})
	hooks.AddOnUnregisterSession(func(_ context.Context, s server.ClientSession) {
		p.dropSubscriptions(s.SessionID())
	})
}

// onContentRequest sees every host request, raw, before mcp-go handles it:
// a prompts/get with arguments that are not strict JSON, or not all
// strings, is recorded and refused (mcp-go would otherwise keep one of two
// duplicate names); resources/subscribe and unsubscribe are checked and
// forwarded (subscriptions.go). An error refuses the request (-32600).
func (p *Proxy) onContentRequest(ctx context.Context, _ any, message any) error {
	raw, ok := message.(json.RawMessage)
	if !ok {
		return nil
	}
	var m struct {
		Method string `json:"method"`
	}
	if json.Unmarshal(raw, &m) != nil {
		return nil // mcp-go answers it
	}
	switch m.Method {
	case "prompts/get", "resources/subscribe", "resources/unsubscribe":
	default:
		return nil
	}
	var r struct {
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal(raw, &r) != nil {
		return nil
	}
	switch m.Method {
	case "prompts/get":
		return p.checkPromptRequest(ctx, r.Params)
	case "resources/subscribe":
		return p.subscribe(ctx, r.Params)
	default:
		return p.unsubscribe(ctx, r.Params)
	}
}
