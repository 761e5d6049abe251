package proxy

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/mcp-guard/mcp-guard/classify"
	"github.com/mcp-guard/mcp-guard/gate"
	"github.com/mcp-guard/mcp-guard/ledger"
	"github.com/mcp-guard/mcp-guard/pin"
	"github.com/mcp-guard/mcp-guard/secrets"
)

// What the host sees is one pure function, computeView, of the upstreams'
// latest listings, the pins, the rules and the listings that failed: it
// does no I/O and reads no ledger; the one lock it takes is the schema
// cache's, around each compile (pin.SchemaCache). serve's refresh reads the
// pins, calls it and hands its result to mcp-go; `mcp-guard tools` prints
// its reports; `mcp-guard explain` asks it about one tool, the pins standing
// in for the listings (ToolFromPins). Tools, prompts, resources and
// templates go through the same checks (gate's: exposure.go), in the same
// order, where they apply: a rule must cover the item, its text and schemas must pass,
// a tool must be callable without tasks, its server's instructions must be
// pinned as they are, its own pin must match what is listed, its exposed
// name must be valid and no other item of its kind may share it.

// serverListing is what one upstream listed at its latest relist.
type serverListing struct {
	tools        []pin.Tool
	instructions []byte                      // raw JSON string from initialize
	items        map[pin.ItemKind][]pin.Item // prompts, resources, templates (nil: not listed)
	itemErrs     map[pin.ItemKind]error      // listings that failed: nothing of that kind is shown
	// trustNewTools: its [[server]] says trust_new_tools (see viewInput.dryRunTOFU).
	trustNewTools bool
}

// exposer is what the rules say a host may see; *gate.Gate is one.
type exposer interface {
	Exposable(server, tool string) (classify.Match, bool)
	ExposablePrompt(server, prompt string) (classify.Match, bool)
	ExposableResource(server, uri string) (classify.Match, bool)
	ExposableTemplate(server, uriTemplate string) (classify.Match, bool)
}

// viewInput is everything what the host sees depends on.
type viewInput struct {
	servers  []string                 // upstream names in config order
	bare     bool                     // the one server's tools and prompts keep their own names (namespace = false)
	listings map[string]serverListing // the upstreams up and listed now
	pins     []ledger.Pin             // every pin the ledger holds
	rules    exposer
	schemas  gate.SchemaCompiler
	// dryRunTOFU: listing without writing pins (mcp-guard tools) in tofu
	// mode. What serve would pin at once counts as pinned: all a server
	// lists at its first contact (no pin of it recorded), and with
	// trust_new_tools what it adds.
	dryRunTOFU bool
	// secrets, when set, refuses a listed definition carrying a known
	// secret (T1): it is never shown to the host.
	secrets *secrets.Redactor
}

// view is what the host sees at one moment, and why the rest is withheld.
type view struct {
	exposed map[string]exposed    // tools by exposed name
	known   map[string]hiddenTool // withheld tools by the name they would have had
	report  []ToolReport
	sig     string // identifies the exposed tools; the host is told only when it changes
	// instructions is what a host's initialize result carries: the
	// instructions of the servers listed now whose instructions are pinned
	// as they are, each headed by its server's name.
	instructions string
	// instructionsWithheld: pinned instructions not given to hosts, and why.
	instructionsWithheld []hiddenTool
	content              *contentView
	// lists: what each list request is answered with (hostraw.go); set
	// by refresh.
	lists map[string]json.RawMessage
}

// contentView is what the host sees of prompts and resources at one moment.
type contentView struct {
	exposed map[pin.ItemKind]map[string]exposedItem // by exposed name, host URI or host URI template
	hidden  map[pin.ItemKind]map[string]hiddenItem  // by the name or URI the item would have had
	report  []ItemReport
	sig     map[pin.ItemKind]string
	failed  []string // listings that failed, "server: method: error"
}

// hiddenTool is an upstream tool the host is not shown, and why.
type hiddenTool struct {
	server, tool, why string
}

// hiddenItem is a listed item the host is not shown, and why.
type hiddenItem struct {
	server, key, why string
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
func (in viewInput) exposedName(server, name string) string {
	if in.bare {
		return name
	}
	return ExposedName(server, name)
}

// wouldPin reports whether, listing without writing pins, what server lists
// unpinned would be pinned by serve at once.
func (in viewInput) wouldPin(server string, pins gate.PinIndex) bool {
	if !in.dryRunTOFU {
		return false
	}
	if in.listings[server].trustNewTools {
		return true
	}
	for k := range pins {
		if k[0] == server && k[1] != ledger.IssuerPin { // a sign-in's pin makes no server seen
			return false
		}
	}
	return true
}

// computeView decides what the host sees: every tool, prompt, resource and
// template listed now, shown under its exposed name or host URI with what
// its handler needs, or withheld with the reason.
func computeView(in viewInput) *view {
	pins := gate.IndexPins(in.pins)
	v := &view{exposed: map[string]exposed{}, known: map[string]hiddenTool{}}
	c := &contentView{exposed: map[pin.ItemKind]map[string]exposedItem{}, hidden: map[pin.ItemKind]map[string]hiddenItem{}, sig: map[pin.ItemKind]string{}}
	v.content = c
	for _, kind := range itemKinds {
		c.exposed[kind], c.hidden[kind] = map[string]exposedItem{}, map[string]hiddenItem{}
	}

	// Tools: each checked on its own, then named (exposeAll).
	type toolCand struct {
		at  int // in v.report
		e   exposed
		why string
	}
	var tools []toolCand
	for _, srv := range in.servers {
		l, ok := in.listings[srv]
		if !ok {
			continue
		}
		assume := in.wouldPin(srv, pins)
		hold := gate.ServerHold(srv, l.instructions, pins, assume)
		if hold == "" {
			text, why := gate.InstructionsText(l.instructions)
			switch {
			case why != "":
				v.instructionsWithheld = append(v.instructionsWithheld, hiddenTool{server: srv, tool: gate.InstructionsPin, why: why})
			case text != "":
				if v.instructions != "" {
					v.instructions += "\n\n"
				}
				v.instructions += "[" + srv + "]\n" + text
			}
		}
		names := make([]string, len(l.tools))
		for i, t := range l.tools {
			names[i] = t.Name
		}
		dups := gate.Duplicates(names)
		for _, t := range l.tools {
			schema, output, refused := gate.CheckTool(in.schemas, t)
			if refused == "" {
				refused = gate.CarriesSecret(in.secrets, t.Raw)
			}
			if dups[t.Name] {
				schema, output, refused = nil, nil, fmt.Sprintf("refused: the server lists more than one tool named %q, so which one a call reaches is ambiguous", t.Name)
			}
			m, covered := in.rules.Exposable(srv, t.Name)
			it := gate.Listed{Server: srv, PinName: t.Name, Digest: t.Digest(), Refused: refused, TaskOnly: t.TaskSupport == "required", Match: m, Covered: covered}
			why, state := gate.Withhold(it, hold, pins, assume)
			r := ToolReport{Server: srv, Tool: t.Name, Digest: it.Digest, PinState: state}
			if covered {
				r.Rule, r.Class, r.Action = m.Rule, string(m.Class), string(m.Action)
			}
			v.report = append(v.report, r)
			tools = append(tools, toolCand{at: len(v.report) - 1, why: why,
				e: exposed{Name: in.exposedName(srv, t.Name), Server: srv, Tool: t, Schema: schema, Output: output}})
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
			t, err := hostTool(tc.e)
			if err != nil {
				tc.why = "refused: cannot be shown to the host: " + err.Error()
			} else {
				tc.e.host = t
				v.exposed[tc.e.Name] = tc.e
				v.report[tc.at].Exposed = tc.e.Name
				sig = append(sig, tc.e.Name+"="+tc.e.Tool.Digest())
				continue
			}
		}
		v.report[tc.at].Hidden = tc.why
		v.known[tc.e.Name] = hiddenTool{tc.e.Server, tc.e.Tool.Name, tc.why}
	}
	sort.Strings(sig)
	v.sig = strings.Join(sig, ",")

	// Prompts, resources and templates: the same checks, then named per kind.
	type itemCand struct {
		at  int // in c.report
		e   exposedItem
		why string
	}
	cands := map[pin.ItemKind][]itemCand{}
	for _, srv := range in.servers {
		l, ok := in.listings[srv]
		if !ok {
			continue
		}
		for _, kind := range itemKinds {
			if err := l.itemErrs[kind]; err != nil {
				c.failed = append(c.failed, fmt.Sprintf("%s: %v", srv, err))
			}
		}
		if l.items == nil {
			continue
		}
		assume := in.wouldPin(srv, pins)
		hold := gate.ServerHold(srv, l.instructions, pins, assume)
		for _, kind := range itemKinds {
			keys := make([]string, len(l.items[kind]))
			for i, it := range l.items[kind] {
				keys[i] = it.Key
			}
			dups := gate.Duplicates(keys)
			for _, item := range l.items[kind] {
				refused := gate.CheckItem(item, parseTemplate)
				if refused == "" {
					refused = gate.CarriesSecret(in.secrets, item.Raw)
				}
				if dups[item.Key] {
					refused = fmt.Sprintf("refused: the server lists more than one %s %q", kind.Noun(), item.Key)
				}
				m, covered := exposable(in.rules, srv, item)
				it := gate.Listed{Server: srv, PinName: kind.PinName(item.Key), Digest: item.Digest(), Refused: refused, Match: m, Covered: covered}
				why, state := gate.Withhold(it, hold, pins, assume)
				r := ItemReport{Kind: kind.Noun(), Server: srv, Key: item.Key, Digest: it.Digest, PinState: state}
				if covered {
					r.Rule, r.Action = m.Rule, string(m.Action)
				}
				c.report = append(c.report, r)
				cands[kind] = append(cands[kind], itemCand{at: len(c.report) - 1, why: why,
					e: exposedItem{server: srv, item: item, host: hostName(srv, item, in.bare)}})
			}
		}
	}
	for _, kind := range itemKinds {
		ks := cands[kind]
		var names []nameCand
		for i, ic := range ks {
			if ic.why == "" {
				names = append(names, nameCand{at: i, name: ic.e.host})
			}
		}
		for i, why := range exposeAll(kind.Noun(), names, kind == pin.Prompts) {
			ks[i].why = why
		}
		var sig []string
		for _, ic := range ks {
			if ic.why == "" {
				if err := ic.e.shown(); err != nil {
					ic.why = "refused: cannot be shown to the host: " + err.Error()
				} else {
					c.exposed[kind][ic.e.host] = ic.e
					c.report[ic.at].Exposed = ic.e.host
					sig = append(sig, ic.e.host+"="+ic.e.item.Digest())
					continue
				}
			}
			c.report[ic.at].Hidden = ic.why
			c.hidden[kind][ic.e.host] = hiddenItem{ic.e.server, ic.e.item.Key, ic.why}
		}
		sort.Strings(sig)
		c.sig[kind] = strings.Join(sig, ",")
	}
	return v
}

// exposable is the rule that lets the host see an item.
func exposable(rules exposer, server string, it pin.Item) (classify.Match, bool) {
	switch it.Kind {
	case pin.Prompts:
		return rules.ExposablePrompt(server, it.Key)
	case pin.Resources:
		return rules.ExposableResource(server, it.Key)
	}
	return rules.ExposableTemplate(server, it.Key)
}

// shown builds what mcp-go shows the host of the item from its raw
// definition.
func (e *exposedItem) shown() error {
	var err error
	switch e.item.Kind {
	case pin.Prompts:
		e.prompt, err = hostPrompt(*e)
	case pin.Resources:
		e.resource, err = hostResource(*e)
	default:
		e.template, err = hostTemplate(*e)
	}
	return err
}

// ToolFromPins says what the host would see of server/tool if every server
// listed now what its pins hold (the pending definition where one waits for
// the operator, else the accepted one): its report, its pinned inputSchema
// compiled when it is exposed, and whether any pin of it exists at all.
// servers are the configured upstreams in config order; rules those
// serve decides by. It is how `mcp-guard explain` asks computeView about a
// tool without starting any upstream.
func ToolFromPins(servers []string, pins []ledger.Pin, rules *gate.Gate, server, tool string) (ToolReport, *pin.Schema, bool) {
	in := viewInput{servers: servers, listings: map[string]serverListing{}, pins: pins, rules: rules,
		schemas: pin.NewSchemaCache(pin.SchemaLimits{}, 0)}
	for _, pn := range pins {
		raw := pn.Raw
		if pn.PendingDigest != "" {
			raw = pn.PendingRaw
		}
		if pn.DecodeError != "" || pin.IsItemPinName(pn.Tool) {
			continue
		}
		l := in.listings[pn.Server]
		if pn.Tool == gate.InstructionsPin {
			l.instructions = raw
		} else if t, err := pin.ParseTool(raw); err == nil {
			l.tools = append(l.tools, t)
		} else {
			continue
		}
		in.listings[pn.Server] = l
	}
	v := computeView(in)
	for _, r := range v.report {
		if r.Server == server && r.Tool == tool {
			return r, v.exposed[r.Exposed].Schema, true
		}
	}
	return ToolReport{}, nil, false
}
