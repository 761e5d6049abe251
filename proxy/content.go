package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcp-guard/mcp-guard/gate"
	"github.com/mcp-guard/mcp-guard/ledger"
	"github.com/mcp-guard/mcp-guard/pin"
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

// contentCaps is what an upstream offers besides tools, read from its
// initialize result.
type contentCaps struct {
	prompts, resources, subscribe bool
}

func parseContentCaps(initResult json.RawMessage) contentCaps {
	var r struct {
		Capabilities struct {
			Prompts   json.RawMessage `json:"prompts"`
			Resources json.RawMessage `json:"resources"`
		} `json:"capabilities"`
	}
	if json.Unmarshal(initResult, &r) != nil {
		return contentCaps{}
	}
	present := func(raw json.RawMessage) bool { return len(raw) > 0 && string(raw) != "null" }
	c := contentCaps{prompts: present(r.Capabilities.Prompts), resources: present(r.Capabilities.Resources)}
	if c.resources {
		var res struct {
			Subscribe bool `json:"subscribe"`
		}
		_ = json.Unmarshal(r.Capabilities.Resources, &res)
		c.subscribe = res.Subscribe
	}
	return c
}

func (c contentCaps) offers(k pin.ItemKind) bool {
	if k == pin.Prompts {
		return c.prompts
	}
	return c.resources
}

// contentNotify takes the notifications about prompts and resources; it
// runs on the read loop and never blocks. A list_changed is handled as the
// tools' one is (the supervisor lists everything again); a resources/updated
// URI is queued for the relay (subscriptions.go). It reports whether it took the
// notification.
func (u *upstream) contentNotify(method string, params json.RawMessage) bool {
	switch method {
	case "notifications/prompts/list_changed", "notifications/resources/list_changed":
		select {
		case u.listChanged <- struct{}{}:
		default: // one is already pending
		}
	case "notifications/resources/updated":
		var p struct {
			URI string `json:"uri"`
		}
		if json.Unmarshal(params, &p) != nil || p.URI == "" {
			return true
		}
		select {
		case u.updated <- p.URI:
		default:
			u.log.Warn("resources/updated dropped: too many waiting to be relayed", "uri", truncate(p.URI, 200))
		}
	default:
		return false
	}
	return true
}

// listItems walks every page of one listing, refusing cursor loops and
// results over the tools/list page and byte caps.
func (u *upstream) listItems(ctx context.Context, kind pin.ItemKind) ([]pin.Item, error) {
	var items []pin.Item
	seen := map[string]bool{}
	cursor, total := "", 0
	for page := 0; ; page++ {
		if page == u.limits.ListPages {
			return nil, fmt.Errorf("%s: more than %d pages", kind.Method(), u.limits.ListPages)
		}
		params := json.RawMessage(`{}`)
		if cursor != "" {
			params = json.RawMessage(`{"cursor":` + string(jsonString(cursor)) + `}`)
		}
		res, err := u.call(ctx, kind.Method(), params)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", kind.Method(), err)
		}
		total += len(res)
		if total > u.limits.ListBytes {
			return nil, fmt.Errorf("%s: results over %d bytes", kind.Method(), u.limits.ListBytes)
		}
		pg, err := pin.SplitItems(kind, res)
		if err != nil {
			return nil, err
		}
		items = append(items, pg.Items...)
		if pg.NextCursor == "" {
			return items, nil
		}
		if seen[pg.NextCursor] {
			return nil, fmt.Errorf("%s: cursor %q repeated", kind.Method(), pg.NextCursor)
		}
		seen[pg.NextCursor] = true
		cursor = pg.NextCursor
	}
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

// contentView is what the host sees of prompts and resources at one moment.
type contentView struct {
	exposed map[pin.ItemKind]map[string]exposedItem // by exposed name, host URI or host URI template
	hidden  map[pin.ItemKind]map[string]hiddenItem  // by the name or URI the item would have had
	report  []ItemReport
	sig     map[pin.ItemKind]string
}

// hiddenItem is a listed item the host is not shown, and why.
type hiddenItem struct {
	server, key, why string
}

// exposedItem is one prompt, resource or template as the host sees it.
type exposedItem struct {
	server string
	item   pin.Item
	host   string // the exposed prompt name, host URI or host URI template
}

// ItemReport is what became of one upstream prompt, resource or template.
type ItemReport struct {
	Kind        string // prompt, resource or template
	Server, Key string // Key: the prompt's name, the resource's URI, the template
	Exposed     string // the name or URI the host sees; empty when hidden
	Hidden      string // why the host does not see it
	PinState    string // pinned, new, changed, rejected, refused, or "" when not pinned
	Rule        int    // the rule that exposes it (0: none)
	Action      string
	Digest      string // SHA-256 of its raw bytes as listed now
}

// hostName is what the host sees an item as.
func hostName(server string, it pin.Item) string {
	if it.Kind == pin.Prompts {
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
		if !u.content.offers(kind) {
			continue
		}
		lctx, cancel := context.WithTimeout(ctx, p.opts.Limits.StartTimeout)
		items, err := u.listItems(lctx, kind)
		cancel()
		if err != nil {
			l.errs[kind] = err
			p.log.Error("upstream listing failed; none of what it lists is exposed", "server", u.name, "method", kind.Method(), "err", err)
			continue
		}
		l.items[kind] = items
		seen, dups := map[string]bool{}, map[string]bool{}
		for _, it := range items {
			if seen[it.Key] {
				dups[it.Key] = true
			}
			seen[it.Key] = true
		}
		l.dups[kind] = dups
	}
	if !p.opts.DryRun {
		for _, kind := range itemKinds {
			for _, it := range l.items[kind] {
				if checkItem(it) != "" || l.dups[kind][it.Key] {
					continue
				}
				if _, err := p.opts.Ledger.ObservePinAs(ctx, u.name, kind.PinName(it.Key), it.Digest(), it.Raw, trust); err != nil {
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
	start := u.content.resources && !c.relaying[u]
	if start {
		c.relaying[u] = true
	}
	c.mu.Unlock()
	if start {
		go p.relayUpdates(u)
	}
	p.resubscribe(ctx, u)
}

// checkItem says why a listed item must be refused whatever the pins say:
// text that can hide itself from the operator, or a template that does not
// parse.
func checkItem(it pin.Item) string {
	if probs := pin.CheckItemText(it.Raw); len(probs) > 0 {
		return "refused: " + pin.DescribeProblems(probs)
	}
	if it.Kind == pin.Templates {
		if _, err := uriTemplate(it.Key); err != nil {
			return fmt.Sprintf("refused: uriTemplate %q does not parse: %v", it.Key, err)
		}
	}
	return ""
}

// uriTemplate parses an RFC 6570 template with mcp-go's own parser.
func uriTemplate(s string) (*mcp.URITemplate, error) {
	var t mcp.URITemplate
	if err := json.Unmarshal(jsonString(s), &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// exposable is the rule that lets the host see an item.
func (p *Proxy) exposable(server string, it pin.Item) (gate.Match, bool) {
	switch it.Kind {
	case pin.Prompts:
		return p.opts.Gate.ExposablePrompt(server, it.Key)
	case pin.Resources:
		return p.opts.Gate.ExposableResource(server, it.Key)
	}
	return p.opts.Gate.ExposableTemplate(server, it.Key)
}

// refreshContent recomputes what the host sees of prompts and resources
// from the latest listings and pins (refresh calls it, under refreshMu),
// and gives the host each changed list in one batch. Only servers whose
// tools are live (up and listed) are shown.
func (p *Proxy) refreshContent(byName map[[2]string]ledger.Pin, live map[string]listing) {
	c := &p.content
	c.mu.Lock()
	listings := make(map[string]contentListing, len(c.live))
	for k, v := range c.live {
		listings[k] = v
	}
	old := c.view
	c.mu.Unlock()

	v := &contentView{exposed: map[pin.ItemKind]map[string]exposedItem{}, hidden: map[pin.ItemKind]map[string]hiddenItem{}, sig: map[pin.ItemKind]string{}}
	for _, kind := range itemKinds {
		v.exposed[kind], v.hidden[kind] = map[string]exposedItem{}, map[string]hiddenItem{}
	}
	for _, srv := range p.order {
		l, up := live[srv]
		cl, listed := listings[srv]
		if !up || !listed {
			continue
		}
		hold := p.serverHold(srv, l, byName)
		for _, kind := range itemKinds {
			names := map[string]int{}
			for _, it := range cl.items[kind] {
				names[hostName(srv, it)]++
			}
			for _, it := range cl.items[kind] {
				r := ItemReport{Kind: kind.Noun(), Server: srv, Key: it.Key, Digest: it.Digest()}
				refused := checkItem(it)
				if cl.dups[kind][it.Key] {
					refused = fmt.Sprintf("refused: the server lists more than one %s %q", kind.Noun(), it.Key)
				}
				pn, pinned := byName[[2]string{srv, kind.PinName(it.Key)}]
				if !pinned && p.dryRunPins(srv, byName) && refused == "" {
					pn, pinned = ledger.Pin{State: ledger.PinPinned, Digest: it.Digest()}, true
				}
				switch {
				case refused != "":
					r.PinState = "refused"
				case pinned:
					r.PinState = pn.State
				}
				m, ok := p.exposable(srv, it)
				if ok {
					r.Rule, r.Action = m.Rule, string(m.Action)
				}
				host := hostName(srv, it)
				switch {
				case !ok:
					r.Hidden = "no rule matches it"
				case refused != "":
					r.Hidden = refused
				case hold != "":
					r.Hidden = hold
				case !pinned || pn.State != ledger.PinPinned || pn.Digest != it.Digest():
					st := "not pinned"
					if pinned {
						st = "pin " + pn.State
					}
					r.Hidden = fmt.Sprintf("%s: see mcp-guard pin diff %s/%s", st, srv, kind.PinName(it.Key))
				case kind == pin.Prompts && !exposedNameRE.MatchString(host):
					r.Hidden = fmt.Sprintf("exposed name %q does not match ^[a-zA-Z0-9_-]{1,64}$", host)
				case names[host] > 1:
					r.Hidden = fmt.Sprintf("exposed name %q collides with another %s (%d share it)", host, kind.Noun(), names[host])
				}
				if r.Hidden == "" {
					r.Exposed = host
					v.exposed[kind][host] = exposedItem{server: srv, item: it, host: host}
				} else {
					v.hidden[kind][host] = hiddenItem{srv, it.Key, r.Hidden}
				}
				v.report = append(v.report, r)
			}
		}
	}

	var prompts []server.ServerPrompt
	var resources []server.ServerResource
	var templates []server.ServerResourceTemplate
	for _, kind := range itemKinds {
		var sig []string
		for host, e := range v.exposed[kind] {
			var err error
			switch kind {
			case pin.Prompts:
				var pr mcp.Prompt
				if pr, err = hostPrompt(e); err == nil {
					prompts = append(prompts, server.ServerPrompt{Prompt: pr, Handler: p.promptHandler(e)})
				}
			case pin.Resources:
				var rs mcp.Resource
				if rs, err = hostResource(e); err == nil {
					resources = append(resources, server.ServerResource{Resource: rs, Handler: p.resourceHandler(e)})
				}
			case pin.Templates:
				var tm mcp.ResourceTemplate
				if tm, err = hostTemplate(e); err == nil {
					templates = append(templates, server.ServerResourceTemplate{Template: tm, Handler: server.ResourceTemplateHandlerFunc(p.resourceHandler(e))})
				}
			}
			if err != nil {
				why := fmt.Sprintf("refused: cannot be shown to the host: %v", err)
				delete(v.exposed[kind], host)
				v.hidden[kind][host] = hiddenItem{e.server, e.item.Key, why}
				for i := range v.report {
					if v.report[i].Exposed == host && v.report[i].Kind == kind.Noun() {
						v.report[i].Exposed, v.report[i].Hidden = "", why
					}
				}
				continue
			}
			sig = append(sig, host+"="+e.item.Digest())
		}
		sort.Strings(sig)
		v.sig[kind] = strings.Join(sig, ",")
	}

	c.mu.Lock()
	c.view = v
	c.mu.Unlock()
	changed := func(k pin.ItemKind) bool {
		if old == nil {
			return v.sig[k] != ""
		}
		return old.sig[k] != v.sig[k]
	}
	// One batch per list: one list_changed to the hosts each.
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
	var out []string
	for _, srv := range p.order {
		for _, kind := range itemKinds {
			if err := p.content.live[srv].errs[kind]; err != nil {
				out = append(out, fmt.Sprintf("%s: %v", srv, err))
			}
		}
	}
	return out
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
