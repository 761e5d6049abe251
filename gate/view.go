package gate

import (
	"fmt"
	"sort"
	"strings"

	"github.com/mcp-guard/mcp-guard/classify"
	"github.com/mcp-guard/mcp-guard/ledger"
	"github.com/mcp-guard/mcp-guard/pin"
	"github.com/mcp-guard/mcp-guard/secrets"
)

// What the host sees is one pure function, ComputeView, of the upstreams'
// latest listings, the pins, the rules and the listings that failed: it
// does no I/O and reads no ledger; the one lock it takes is the schema
// cache's, around each compile (pin.SchemaCache). serve's refresh reads the
// pins, calls it and shows the host its result; `mcp-guard tools` prints
// its reports; `mcp-guard explain` asks it about one tool, the pins standing
// in for the listings (ToolFromPins). Tools, prompts, resources and
// templates go through the same checks (exposure.go), in the same order,
// where they apply: a rule must cover the item, its text and schemas must
// pass, a tool must be callable without tasks, its server's instructions
// must be pinned as they are, its own pin must match what is listed, its
// exposed name must be valid, no other item of its kind may share it, and
// the host-facing server must be able to show it (Presenter).

// Presenter is how the host-facing server shows definitions: whether it
// can show one under its exposed name (its encoding may refuse what the
// server's bytes hold), and whether it reads a URI template. proxy's is
// mcp-go's; gate imports no MCP library.
type Presenter interface {
	ShowTool(exposed string, t pin.Tool) error
	ShowItem(host string, it pin.Item) error
	ParseTemplate(s string) error
}

// ServerListing is what one upstream listed at its latest relist.
type ServerListing struct {
	Tools        []pin.Tool
	Instructions []byte                      // raw JSON string from initialize
	Items        map[pin.ItemKind][]pin.Item // prompts, resources, templates (nil: not listed)
	ItemErrs     map[pin.ItemKind]error      // listings that failed: nothing of that kind is shown
	// TrustNewTools: its [[server]] says trust_new_tools (see
	// ViewInput.DryRunTOFU).
	TrustNewTools bool
}

// ViewInput is everything what the host sees depends on.
type ViewInput struct {
	Servers  []string                 // upstream names in config order
	Bare     bool                     // the one server's tools and prompts keep their own names (namespace = false)
	Listings map[string]ServerListing // the upstreams up and listed now
	Pins     []ledger.Pin             // every pin the ledger holds
	Rules    *Gate
	Schemas  SchemaCompiler
	Present  Presenter
	// DryRunTOFU: listing without writing pins (mcp-guard tools) in tofu
	// mode. What serve would pin at once counts as pinned: all a server
	// lists at its first contact (no pin of it recorded), and with
	// trust_new_tools what it adds.
	DryRunTOFU bool
	// Secrets, when set, refuses a listed definition carrying a known
	// secret (T1): it is never shown to the host.
	Secrets *secrets.Redactor
}

// View is what the host sees at one moment, and why the rest is withheld.
type View struct {
	Exposed map[string]ExposedTool // tools by exposed name
	Known   map[string]Hidden      // withheld tools by the name they would have had
	Report  []ToolReport
	Sig     string // identifies the exposed tools; the host is told only when it changes
	// Instructions is what a host's initialize result carries: the
	// instructions of the servers listed now whose instructions are pinned
	// as they are, each headed by its server's name.
	Instructions string
	// InstructionsWithheld: pinned instructions not given to hosts, and why.
	InstructionsWithheld []Hidden
	Content              *ContentView
}

// ContentView is what the host sees of prompts and resources at one moment.
type ContentView struct {
	Exposed map[pin.ItemKind]map[string]ExposedItem // by exposed name, host URI or host URI template
	Hidden  map[pin.ItemKind]map[string]Hidden      // by the name or URI the item would have had
	Report  []ItemReport
	Sig     map[pin.ItemKind]string
	Failed  []string // listings that failed, "server: method: error"
}

// ExposedTool is one tool as the host sees it, and where it goes.
type ExposedTool struct {
	Name   string // as the host sees it
	Server string
	Tool   pin.Tool
	Schema *pin.Schema // the pinned inputSchema, compiled
	Output *pin.Schema // the pinned outputSchema, compiled; nil when it has none
}

// ExposedItem is one prompt, resource or template as the host sees it.
type ExposedItem struct {
	Server string
	Item   pin.Item
	Host   string // the exposed prompt name, host URI or host URI template
}

// Hidden is a listed tool or item the host is not shown, and why; Name is
// the tool's or prompt's name, or the resource's URI or template.
type Hidden struct {
	Server, Name, Why string
}

// ToolReport is what became of one upstream tool.
type ToolReport struct {
	Server, Tool string
	Exposed      string // the name the host sees; empty when hidden
	Hidden       string // why the host does not see it
	PinState     string // pinned, new, changed, rejected, refused, or "" when not pinned
	Rule         int    // first rule that could match it (0: none)
	Class        string
	Action       string
	Digest       string // SHA-256 of the tool's raw bytes as listed now
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

// exposedName is the name the host sees for a server's tool or prompt:
// its own when the one server is served without a prefix.
func (in ViewInput) exposedName(server, name string) string {
	if in.Bare {
		return name
	}
	return ExposedName(server, name)
}

// wouldPin reports whether, listing without writing pins, what server lists
// unpinned would be pinned by serve at once.
func (in ViewInput) wouldPin(server string, pins PinIndex) bool {
	if !in.DryRunTOFU {
		return false
	}
	if in.Listings[server].TrustNewTools {
		return true
	}
	for k := range pins {
		if k[0] == server && k[1] != ledger.IssuerPin { // a sign-in's pin makes no server seen
			return false
		}
	}
	return true
}

// ComputeView decides what the host sees: every tool, prompt, resource and
// template listed now, shown under its exposed name or host URI with what
// its handler needs, or withheld with the reason.
func ComputeView(in ViewInput) *View {
	pins := IndexPins(in.Pins)
	v := &View{Exposed: map[string]ExposedTool{}, Known: map[string]Hidden{}}
	v.Content = in.contentView(pins)

	// Tools: each checked on its own, then named (exposeAll).
	type toolCand struct {
		at  int // in v.Report
		e   ExposedTool
		why string
	}
	var tools []toolCand
	for _, srv := range in.Servers {
		l, ok := in.Listings[srv]
		if !ok {
			continue
		}
		assume := in.wouldPin(srv, pins)
		hold := ServerHold(srv, l.Instructions, pins, assume)
		if hold == "" {
			text, why := InstructionsText(l.Instructions)
			switch {
			case why != "":
				v.InstructionsWithheld = append(v.InstructionsWithheld, Hidden{Server: srv, Name: InstructionsPin, Why: why})
			case text != "":
				if v.Instructions != "" {
					v.Instructions += "\n\n"
				}
				v.Instructions += "[" + srv + "]\n" + text
			}
		}
		names := make([]string, len(l.Tools))
		for i, t := range l.Tools {
			names[i] = t.Name
		}
		dups := Duplicates(names)
		for _, t := range l.Tools {
			schema, output, refused := CheckTool(in.Schemas, t)
			if refused == "" {
				refused = CarriesSecret(in.Secrets, t.Raw)
			}
			if dups[t.Name] {
				schema, output, refused = nil, nil, fmt.Sprintf("refused: the server lists more than one tool named %q, so which one a call reaches is ambiguous", t.Name)
			}
			m, covered := in.Rules.Exposable(srv, t.Name)
			it := Listed{Server: srv, PinName: t.Name, Digest: t.Digest(), Refused: refused, TaskOnly: t.TaskSupport == "required", Match: m, Covered: covered}
			why, state := Withhold(it, hold, pins, assume)
			r := ToolReport{Server: srv, Tool: t.Name, Digest: it.Digest, PinState: state}
			if covered {
				r.Rule, r.Class, r.Action = m.Rule, string(m.Class), string(m.Action)
			}
			v.Report = append(v.Report, r)
			tools = append(tools, toolCand{at: len(v.Report) - 1, why: why,
				e: ExposedTool{Name: in.exposedName(srv, t.Name), Server: srv, Tool: t, Schema: schema, Output: output}})
		}
	}
	var names []nameCand
	for i, tc := range tools {
		if tc.why == "" {
			names = append(names, nameCand{at: i, name: tc.e.Name})
		}
	}
	for i, why := range exposeAll("tool", names, true) {
		tools[i].why = why
	}
	var sig []string
	for _, tc := range tools {
		if tc.why == "" {
			if err := in.Present.ShowTool(tc.e.Name, tc.e.Tool); err != nil {
				tc.why = "refused: cannot be shown to the host: " + err.Error()
			} else {
				v.Exposed[tc.e.Name] = tc.e
				v.Report[tc.at].Exposed = tc.e.Name
				sig = append(sig, tc.e.Name+"="+tc.e.Tool.Digest())
				continue
			}
		}
		v.Report[tc.at].Hidden = tc.why
		v.Known[tc.e.Name] = Hidden{tc.e.Server, tc.e.Tool.Name, tc.why}
	}
	sort.Strings(sig)
	v.Sig = strings.Join(sig, ",")
	return v
}

// contentView is ComputeView for prompts, resources and templates: the
// same checks, then named per kind.
func (in ViewInput) contentView(pins PinIndex) *ContentView {
	c := &ContentView{Exposed: map[pin.ItemKind]map[string]ExposedItem{}, Hidden: map[pin.ItemKind]map[string]Hidden{}, Sig: map[pin.ItemKind]string{}}
	for _, kind := range pin.ItemKinds() {
		c.Exposed[kind], c.Hidden[kind] = map[string]ExposedItem{}, map[string]Hidden{}
	}
	type itemCand struct {
		at  int // in c.Report
		e   ExposedItem
		why string
	}
	cands := map[pin.ItemKind][]itemCand{}
	for _, srv := range in.Servers {
		l, ok := in.Listings[srv]
		if !ok {
			continue
		}
		for _, kind := range pin.ItemKinds() {
			if err := l.ItemErrs[kind]; err != nil {
				c.Failed = append(c.Failed, fmt.Sprintf("%s: %v", srv, err))
			}
		}
		if l.Items == nil {
			continue
		}
		assume := in.wouldPin(srv, pins)
		hold := ServerHold(srv, l.Instructions, pins, assume)
		for _, kind := range pin.ItemKinds() {
			keys := make([]string, len(l.Items[kind]))
			for i, it := range l.Items[kind] {
				keys[i] = it.Key
			}
			dups := Duplicates(keys)
			for _, item := range l.Items[kind] {
				refused := CheckItem(item, in.Present.ParseTemplate)
				if refused == "" {
					refused = CarriesSecret(in.Secrets, item.Raw)
				}
				if dups[item.Key] {
					refused = fmt.Sprintf("refused: the server lists more than one %s %q", kind.Noun(), item.Key)
				}
				m, covered := in.Rules.exposableItem(srv, item)
				it := Listed{Server: srv, PinName: kind.PinName(item.Key), Digest: item.Digest(), Refused: refused, Match: m, Covered: covered}
				why, state := Withhold(it, hold, pins, assume)
				r := ItemReport{Kind: kind.Noun(), Server: srv, Key: item.Key, Digest: it.Digest, PinState: state}
				if covered {
					r.Rule, r.Action = m.Rule, string(m.Action)
				}
				c.Report = append(c.Report, r)
				cands[kind] = append(cands[kind], itemCand{at: len(c.Report) - 1, why: why,
					e: ExposedItem{Server: srv, Item: item, Host: hostName(srv, item, in.Bare)}})
			}
		}
	}
	for _, kind := range pin.ItemKinds() {
		ks := cands[kind]
		var names []nameCand
		for i, ic := range ks {
			if ic.why == "" {
				names = append(names, nameCand{at: i, name: ic.e.Host})
			}
		}
		for i, why := range exposeAll(kind.Noun(), names, kind == pin.Prompts) {
			ks[i].why = why
		}
		var sig []string
		for _, ic := range ks {
			if ic.why == "" {
				if err := in.Present.ShowItem(ic.e.Host, ic.e.Item); err != nil {
					ic.why = "refused: cannot be shown to the host: " + err.Error()
				} else {
					c.Exposed[kind][ic.e.Host] = ic.e
					c.Report[ic.at].Exposed = ic.e.Host
					sig = append(sig, ic.e.Host+"="+ic.e.Item.Digest())
					continue
				}
			}
			c.Report[ic.at].Hidden = ic.why
			c.Hidden[kind][ic.e.Host] = Hidden{ic.e.Server, ic.e.Item.Key, ic.why}
		}
		sort.Strings(sig)
		c.Sig[kind] = strings.Join(sig, ",")
	}
	return c
}

// exposableItem is the rule that lets the host see an item.
func (g *Gate) exposableItem(server string, it pin.Item) (classify.Match, bool) {
	switch it.Kind {
	case pin.Prompts:
		return g.ExposablePrompt(server, it.Key)
	case pin.Resources:
		return g.ExposableResource(server, it.Key)
	}
	return g.ExposableTemplate(server, it.Key)
}

// ToolFromPins says what the host would see of server/tool if every server
// listed now what its pins hold (the pending definition where one waits for
// the operator, else the accepted one): its report, its pinned inputSchema
// compiled when it is exposed, and whether any pin of it exists at all.
// servers are the configured upstreams in config order; rules those serve
// decides by; present the host-facing server's. It is how `mcp-guard
// explain` asks ComputeView about a tool without starting any upstream.
func ToolFromPins(servers []string, pins []ledger.Pin, rules *Gate, present Presenter, server, tool string) (ToolReport, *pin.Schema, bool) {
	in := ViewInput{Servers: servers, Listings: map[string]ServerListing{}, Pins: pins, Rules: rules,
		Schemas: pin.NewSchemaCache(pin.SchemaLimits{}, 0), Present: present}
	for _, pn := range pins {
		raw := pn.Raw
		if pn.PendingDigest != "" {
			raw = pn.PendingRaw
		}
		if pn.DecodeError != "" || pin.IsItemPinName(pn.Tool) {
			continue
		}
		l := in.Listings[pn.Server]
		if pn.Tool == InstructionsPin {
			l.Instructions = raw
		} else if t, err := pin.ParseTool(raw); err == nil {
			l.Tools = append(l.Tools, t)
		} else {
			continue
		}
		in.Listings[pn.Server] = l
	}
	v := ComputeView(in)
	for _, r := range v.Report {
		if r.Server == server && r.Tool == tool {
			return r, v.Exposed[r.Exposed].Schema, true
		}
	}
	return ToolReport{}, nil, false
}
