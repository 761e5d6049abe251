package proxy

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"

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
// resources and templates under mcp-guard URIs (see gate.HostURI).

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
	relaying map[*upstream]bool        // upstreams whose resources/updated are relayed

	subMu sync.Mutex // one subscribe or unsubscribe at a time (subscriptions.go)
	subs  map[subKey]*subscription
}

// contentListing is what one upstream listed at its latest relist.
type contentListing struct {
	items map[pin.ItemKind][]pin.Item
	errs  map[pin.ItemKind]error // listings that failed: nothing of that kind is exposed
	dups  map[pin.ItemKind]map[string]bool
}

// relistContent lists an upstream's prompts, resources and templates (what
// its capabilities offer), pins what passes the checks (what was never seen
// only when trust says why, as for its tools: trustNew), and starts relaying
// its resources/updated. A listing that fails leaves that kind unexposed.
func (p *Proxy) relistContent(ctx context.Context, u *upstream, trust string) {
	l := contentListing{items: map[pin.ItemKind][]pin.Item{}, errs: map[pin.ItemKind]error{}, dups: map[pin.ItemKind]map[string]bool{}}
	for _, kind := range pin.ItemKinds() {
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
		for _, kind := range pin.ItemKinds() {
			for _, it := range l.items[kind] {
				if gate.CheckItem(it, Presenter{}.ParseTemplate) != "" || l.dups[kind][it.Key] {
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

// showContent shows the hosts v: each list of prompts, resources or
// templates that differs from what they were shown is announced with one
// list_changed (resources and templates share one).
func (p *Proxy) showContent(old, v *gate.ContentView) {
	changed := func(k pin.ItemKind) bool {
		if old == nil {
			return v.Sig[k] != ""
		}
		return old.Sig[k] != v.Sig[k]
	}
	if changed(pin.Prompts) {
		p.broadcast(string(mcp.MethodNotificationPromptsListChanged), nil)
	}
	if changed(pin.Resources) || changed(pin.Templates) {
		p.broadcast(string(mcp.MethodNotificationResourcesListChanged), nil)
	}
	if changed(pin.Prompts) || changed(pin.Resources) || changed(pin.Templates) {
		for _, r := range v.Report {
			if r.Hidden != "" {
				p.log.Info(r.Kind+" not exposed", "server", r.Server, r.Kind, r.Key, "reason", r.Hidden)
			}
		}
		p.log.Info("prompts and resources exposed", "prompts", len(v.Exposed[pin.Prompts]), "resources", len(v.Exposed[pin.Resources]), "templates", len(v.Exposed[pin.Templates]))
	}
}

// currentItem returns the gate.ExposedTool item of that kind and host name in the
// current view.
func (p *Proxy) currentItem(kind pin.ItemKind, host string) (gate.ExposedItem, bool) {
	return p.exposed.Item(kind, host)
}

// contentView is what the hosts are shown of prompts and resources now, or
// nil before the first view.
func (p *Proxy) contentView() *gate.ContentView {
	if v := p.exposed.View(); v != nil {
		return v.Content
	}
	return nil
}

// Items reports every prompt, resource and template the upstreams listed
// and what became of it.
func (p *Proxy) Items() []gate.ItemReport {
	v := p.contentView()
	if v == nil {
		return nil
	}
	return v.Report
}

// ItemsFailed reports the listings of prompts, resources or templates that
// failed, as "server: method: error".
func (p *Proxy) ItemsFailed() []string {
	v := p.contentView()
	if v == nil {
		return nil
	}
	return v.Failed
}
