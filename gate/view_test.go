package gate

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mcp-guard/mcp-guard/classify"
	"github.com/mcp-guard/mcp-guard/ledger"
	"github.com/mcp-guard/mcp-guard/pin"
)

// testPresenter shows every definition but those named "unshowable", and
// reads a template as well formed when its braces pair up. proxy's
// Presenter (mcp-go's) is tested in proxy.
type testPresenter struct{}

func (testPresenter) ShowTool(exposed string, t pin.Tool) error {
	if t.Name == "unshowable" {
		return fmt.Errorf("no encoding of %s", exposed)
	}
	return nil
}

func (testPresenter) ShowItem(host string, it pin.Item) error {
	if strings.HasSuffix(it.Key, "unshowable") {
		return fmt.Errorf("no encoding of %s", host)
	}
	return nil
}

func (testPresenter) ParseTemplate(s string) error {
	depth := 0
	for _, r := range s {
		switch r {
		case '{':
			depth++
		case '}':
			depth--
		}
		if depth < 0 || depth > 1 {
			return errors.New("unpaired brace")
		}
	}
	if depth != 0 {
		return errors.New("unclosed expression")
	}
	return nil
}

// viewRules cover every tool, prompt, resource and template whose name or
// URI does not start with "n" (after the scheme).
func viewRules(t *testing.T) *Gate {
	t.Helper()
	rules, err := classify.Compile([]classify.Rule{
		{Server: "*", Tool: "[^n]*", Class: "read", Action: "allow"},
		{Server: "*", Prompt: "[^n]*", Action: "allow"},
		{Server: "*", Resource: "test://[^n]*", Action: "deny"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return New(rules)
}

// tools reads tool objects, or one with just a name and an object schema.
func tools(t *testing.T, raws ...string) []pin.Tool {
	t.Helper()
	var out []pin.Tool
	for _, raw := range raws {
		if !strings.HasPrefix(raw, "{") {
			raw = fmt.Sprintf(`{"name":%q,"inputSchema":{"type":"object"}}`, raw)
		}
		tl, err := pin.ParseTool([]byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tl)
	}
	return out
}

// items reads item objects of one kind, or ones with just their key.
func items(t *testing.T, kind pin.ItemKind, raws ...string) []pin.Item {
	t.Helper()
	var objs []string
	for _, raw := range raws {
		if !strings.HasPrefix(raw, "{") && kind == pin.Prompts {
			raw = fmt.Sprintf(`{"name":%q}`, raw)
		} else if !strings.HasPrefix(raw, "{") {
			raw = fmt.Sprintf(`{%q:%q,"name":"n"}`, kind.KeyField(), raw)
		}
		objs = append(objs, raw)
	}
	field := map[pin.ItemKind]string{pin.Prompts: "prompts", pin.Resources: "resources", pin.Templates: "resourceTemplates"}[kind]
	pg, err := pin.SplitItems(kind, []byte(`{"`+field+`":[`+strings.Join(objs, ",")+`]}`))
	if err != nil {
		t.Fatal(err)
	}
	return pg.Items
}

// listing is one server's listing with no instructions.
func listingOf(ts []pin.Tool, its ...[]pin.Item) ServerListing {
	l := ServerListing{Tools: ts, Instructions: []byte(`""`), Items: map[pin.ItemKind][]pin.Item{}}
	for _, group := range its {
		for _, it := range group {
			l.Items[it.Kind] = append(l.Items[it.Kind], it)
		}
	}
	return l
}

// pinnedAsListed pins everything listed (and each server's instructions)
// as it is listed.
func pinnedAsListed(listings map[string]ServerListing) []ledger.Pin {
	var out []ledger.Pin
	for srv, l := range listings {
		out = append(out, ledger.Pin{Server: srv, Tool: InstructionsPin, State: ledger.PinPinned, Digest: DigestOf(l.Instructions), Raw: l.Instructions})
		for _, tl := range l.Tools {
			out = append(out, ledger.Pin{Server: srv, Tool: tl.Name, State: ledger.PinPinned, Digest: tl.Digest(), Raw: tl.Raw})
		}
		for kind, its := range l.Items {
			for _, it := range its {
				out = append(out, ledger.Pin{Server: srv, Tool: kind.PinName(it.Key), State: ledger.PinPinned, Digest: it.Digest(), Raw: it.Raw})
			}
		}
	}
	return out
}

// setPin changes the pin of server/name: its state, and its digest unless
// digest is "".
func setPin(pins []ledger.Pin, server, name, state, digest string) []ledger.Pin {
	for i := range pins {
		if pins[i].Server == server && pins[i].Tool == name {
			pins[i].State = state
			if digest != "" {
				pins[i].Digest = digest
			}
		}
	}
	return pins
}

func dropPin(pins []ledger.Pin, server, name string) []ledger.Pin {
	return slices.DeleteFunc(pins, func(p ledger.Pin) bool { return p.Server == server && p.Tool == name })
}

// seen is what became of one listed tool or item: kind, server and key,
// then the name it is shown as, or "hidden: " and the reason.
type seen struct{ kind, server, key, shown, pin string }

func seenIn(v *View) []seen {
	var out []seen
	for _, r := range v.Report {
		s := seen{"tool", r.Server, r.Tool, r.Exposed, r.PinState}
		if r.Exposed == "" {
			s.shown = "hidden: " + r.Hidden
		}
		out = append(out, s)
	}
	for _, r := range v.Content.Report {
		s := seen{r.Kind, r.Server, r.Key, r.Exposed, r.PinState}
		if r.Exposed == "" {
			s.shown = "hidden: " + r.Hidden
		}
		out = append(out, s)
	}
	return out
}

// What the host sees, for each reason a tool, prompt, resource or template
// is withheld, and for what is shown: one pure function of the listings,
// the pins, the rules and the failed listings.
func TestComputeView(t *testing.T) {
	rules := viewRules(t)
	one := func(l ServerListing) map[string]ServerListing { return map[string]ServerListing{"s": l} }
	type viewCase struct {
		name     string
		servers  []string // default: "s"
		listings map[string]ServerListing
		pins     func([]ledger.Pin) []ledger.Pin // from pinnedAsListed; nil: unchanged
		dryRun   bool
		want     []seen // each must be in the report, exactly
	}
	cases := []viewCase{{
		name:     "pinned and covered: shown under the server's prefix",
		listings: one(listingOf(tools(t, "x"), items(t, pin.Prompts, "x"), items(t, pin.Resources, "test://x"), items(t, pin.Templates, "test://x/{id}"))),
		want: []seen{
			{"tool", "s", "x", "s__x", "pinned"},
			{"prompt", "s", "x", "s__x", "pinned"}, // a tool and a prompt may share a name: they are asked for apart
			{"resource", "s", "test://x", "mcp-guard://s/test://x", "pinned"},
			{"template", "s", "test://x/{id}", "mcp-guard://s/test://x/{id}", "pinned"},
		},
	}, {
		name:     "no rule covers it",
		listings: one(listingOf(tools(t, "nx"), items(t, pin.Prompts, "nx"), items(t, pin.Resources, "test://nx"), items(t, pin.Templates, "test://nx/{id}"))),
		want: []seen{
			{"tool", "s", "nx", "hidden: no rule matches it", "pinned"},
			{"prompt", "s", "nx", "hidden: no rule matches it", "pinned"},
			{"resource", "s", "test://nx", "hidden: no rule matches it", "pinned"},
			{"template", "s", "test://nx/{id}", "hidden: no rule matches it", "pinned"},
		},
	}, {
		name:     "never pinned",
		listings: one(listingOf(tools(t, "x"), items(t, pin.Prompts, "x"))),
		pins: func(p []ledger.Pin) []ledger.Pin {
			return dropPin(dropPin(p, "s", "x"), "s", "prompt:x")
		},
		want: []seen{
			{"tool", "s", "x", "hidden: not pinned: see mcp-guard pin diff s/x", ""},
			{"prompt", "s", "x", "hidden: not pinned: see mcp-guard pin diff s/prompt:x", ""},
		},
	}, {
		name:     "pin new, changed, rejected, or pinned as something else",
		listings: one(listingOf(tools(t, "a", "b", "c", "d"), items(t, pin.Resources, "test://a", "test://b", "test://c"), items(t, pin.Templates, "test://t/{x}"))),
		pins: func(p []ledger.Pin) []ledger.Pin {
			p = setPin(p, "s", "a", ledger.PinNew, "")
			p = setPin(p, "s", "b", ledger.PinChanged, "")
			p = setPin(p, "s", "c", ledger.PinRejected, "")
			p = setPin(p, "s", "d", ledger.PinPinned, DigestOf([]byte("before")))
			p = setPin(p, "s", "resource:test://a", ledger.PinNew, "")
			p = setPin(p, "s", "resource:test://b", ledger.PinChanged, "")
			p = setPin(p, "s", "resource:test://c", ledger.PinRejected, "")
			return setPin(p, "s", "template:test://t/{x}", ledger.PinPinned, DigestOf([]byte("before")))
		},
		want: []seen{
			{"tool", "s", "a", "hidden: pin new: see mcp-guard pin diff s/a", "new"},
			{"tool", "s", "b", "hidden: pin changed: see mcp-guard pin diff s/b", "changed"},
			{"tool", "s", "c", "hidden: pin rejected: see mcp-guard pin diff s/c", "rejected"},
			{"tool", "s", "d", "hidden: pin pinned: see mcp-guard pin diff s/d", "pinned"},
			{"resource", "s", "test://a", "hidden: pin new: see mcp-guard pin diff s/resource:test://a", "new"},
			{"resource", "s", "test://b", "hidden: pin changed: see mcp-guard pin diff s/resource:test://b", "changed"},
			{"resource", "s", "test://c", "hidden: pin rejected: see mcp-guard pin diff s/resource:test://c", "rejected"},
			{"template", "s", "test://t/{x}", "hidden: pin pinned: see mcp-guard pin diff s/template:test://t/{x}", "pinned"},
		},
	}, {
		name: "text that hides itself is refused, whatever the pin",
		listings: one(listingOf(tools(t, `{"name":"x","description":"a\u202eb","inputSchema":{"type":"object"}}`),
			items(t, pin.Prompts, `{"name":"x","description":"a\u200bb"}`))),
		want: []seen{
			{"tool", "s", "x", "hidden: refused: description has U+202E", "refused"},
			{"prompt", "s", "x", "hidden: refused: description has U+200B", "refused"},
		},
	}, {
		name: "schemas that refer outside or do not compile are refused",
		listings: one(listingOf(tools(t,
			`{"name":"x","inputSchema":{"$ref":"https://example.com/s.json"}}`,
			`{"name":"y","inputSchema":{"type":"object"},"outputSchema":{"type":"nonsense"}}`))),
		want: []seen{
			{"tool", "s", "x", "hidden: refused: inputSchema: ", "refused"},
			{"tool", "s", "y", "hidden: refused: outputSchema: ", "refused"},
		},
	}, {
		name:     "a template that does not parse is refused",
		listings: one(listingOf(nil, items(t, pin.Templates, "test://x/{a"))),
		want:     []seen{{"template", "s", "test://x/{a", `hidden: refused: uriTemplate "test://x/{a" does not parse`, "refused"}},
	}, {
		name:     "a tool may not take a prompt's, a resource's or a sign-in's pin name",
		listings: one(listingOf(tools(t, "prompt:x", "resource:test://x", "oauth:issuer"))),
		want: []seen{
			{"tool", "s", "prompt:x", "hidden: refused: a tool name may not start with prompt:", "refused"},
			{"tool", "s", "resource:test://x", "hidden: refused: a tool name may not start with prompt:", "refused"},
			{"tool", "s", "oauth:issuer", "hidden: refused: a tool name may not start with prompt:", "refused"},
		},
	}, {
		name:     "listed twice by its server: both refused",
		listings: one(listingOf(tools(t, "x", "x"), items(t, pin.Prompts, "x", "x"), items(t, pin.Resources, "test://x", "test://x"))),
		want: []seen{
			{"tool", "s", "x", `hidden: refused: the server lists more than one tool named "x"`, "refused"},
			{"prompt", "s", "x", `hidden: refused: the server lists more than one prompt "x"`, "refused"},
			{"resource", "s", "test://x", `hidden: refused: the server lists more than one resource "test://x"`, "refused"},
		},
	}, {
		name: "a tool that can only run as a task",
		listings: one(listingOf(tools(t,
			`{"name":"x","inputSchema":{"type":"object"},"execution":{"taskSupport":"required"}}`,
			`{"name":"y","inputSchema":{"type":"object"},"execution":{"taskSupport":"optional"}}`))),
		want: []seen{
			{"tool", "s", "x", "hidden: it can only run as a task, and mcp-guard does not relay tasks", "pinned"},
			{"tool", "s", "y", "s__y", "pinned"},
		},
	}, {
		name:     "the server's instructions changed: nothing of it is shown",
		listings: one(listingOf(tools(t, "x"), items(t, pin.Prompts, "x"), items(t, pin.Resources, "test://x"))),
		pins:     func(p []ledger.Pin) []ledger.Pin { return setPin(p, "s", InstructionsPin, ledger.PinChanged, "") },
		want: []seen{
			{"tool", "s", "x", "hidden: the server's instructions are changed: see mcp-guard pin diff s/", "pinned"},
			{"prompt", "s", "x", "hidden: the server's instructions are changed: see mcp-guard pin diff s/", "pinned"},
			{"resource", "s", "test://x", "hidden: the server's instructions are changed: see mcp-guard pin diff s/", "pinned"},
		},
	}, {
		name:     "the server's instructions never pinned",
		listings: one(listingOf(tools(t, "x"))),
		pins:     func(p []ledger.Pin) []ledger.Pin { return dropPin(p, "s", InstructionsPin) },
		want:     []seen{{"tool", "s", "x", "hidden: the server's instructions are unpinned: see mcp-guard pin diff s/", "pinned"}},
	}, {
		name:     "exposed names must match the pattern (tools and prompts; host URIs have none)",
		listings: one(listingOf(tools(t, "has space", strings.Repeat("y", 62)), items(t, pin.Prompts, "has space"), items(t, pin.Resources, "test://has space"))),
		want: []seen{
			{"tool", "s", "has space", `hidden: exposed name "s__has space" does not match ^[a-zA-Z0-9_-]{1,64}$`, "pinned"},
			{"tool", "s", strings.Repeat("y", 62), "hidden: exposed name \"s__" + strings.Repeat("y", 62) + "\" does not match", "pinned"},
			{"prompt", "s", "has space", `hidden: exposed name "s__has space" does not match`, "pinned"},
			{"resource", "s", "test://has space", "mcp-guard://s/test://has space", "pinned"},
		},
	}, {
		name:    "names that collide across servers: every one refused, for tools and prompts",
		servers: []string{"a", "a_"},
		listings: map[string]ServerListing{
			"a":  listingOf(tools(t, "_x", "ok"), items(t, pin.Prompts, "_x")),
			"a_": listingOf(tools(t, "x"), items(t, pin.Prompts, "x")),
		},
		want: []seen{
			{"tool", "a", "_x", `hidden: exposed name "a___x" collides with another tool (2 tools share it)`, "pinned"},
			{"tool", "a_", "x", `hidden: exposed name "a___x" collides with another tool (2 tools share it)`, "pinned"},
			{"tool", "a", "ok", "a__ok", "pinned"},
			{"prompt", "a", "_x", `hidden: exposed name "a___x" collides with another prompt (2 prompts share it)`, "pinned"},
			{"prompt", "a_", "x", `hidden: exposed name "a___x" collides with another prompt (2 prompts share it)`, "pinned"},
		},
	}, {
		name:    "what is withheld for another reason takes no name from what is shown",
		servers: []string{"a", "a_"},
		listings: map[string]ServerListing{
			"a":  listingOf(tools(t, "_x"), items(t, pin.Prompts, "_x")),
			"a_": listingOf(tools(t, "x"), items(t, pin.Prompts, "x")),
		},
		pins: func(p []ledger.Pin) []ledger.Pin {
			return setPin(setPin(p, "a_", "x", ledger.PinChanged, ""), "a_", "prompt:x", ledger.PinNew, "")
		},
		want: []seen{
			{"tool", "a", "_x", "a___x", "pinned"},
			{"tool", "a_", "x", "hidden: pin changed: see mcp-guard pin diff a_/x", "changed"},
			{"prompt", "a", "_x", "a___x", "pinned"},
			{"prompt", "a_", "x", "hidden: pin new: see mcp-guard pin diff a_/prompt:x", "new"},
		},
	}, {
		name:     "what the host-facing server cannot show is withheld",
		listings: one(listingOf(tools(t, "unshowable", "x"), items(t, pin.Prompts, "unshowable", "x"), items(t, pin.Resources, "test://unshowable"))),
		want: []seen{
			{"tool", "s", "unshowable", "hidden: refused: cannot be shown to the host: no encoding of s__unshowable", "pinned"},
			{"tool", "s", "x", "s__x", "pinned"},
			{"prompt", "s", "unshowable", "hidden: refused: cannot be shown to the host: no encoding of s__unshowable", "pinned"},
			{"prompt", "s", "x", "s__x", "pinned"},
			{"resource", "s", "test://unshowable", "hidden: refused: cannot be shown to the host: no encoding of mcp-guard://s/test://unshowable", "pinned"},
		},
	}, {
		name:     "listing without pinning, tofu: a server's first contact counts as pinned",
		listings: one(listingOf(tools(t, "x"), items(t, pin.Prompts, "x"))),
		pins:     func([]ledger.Pin) []ledger.Pin { return nil },
		dryRun:   true,
		want:     []seen{{"tool", "s", "x", "s__x", "pinned"}, {"prompt", "s", "x", "s__x", "pinned"}},
	}, {
		name:     "listing without pinning, tofu: what a known server adds waits",
		listings: one(listingOf(tools(t, "x", "y"))),
		pins:     func(p []ledger.Pin) []ledger.Pin { return dropPin(p, "s", "y") },
		dryRun:   true,
		want:     []seen{{"tool", "s", "x", "s__x", "pinned"}, {"tool", "s", "y", "hidden: not pinned: see mcp-guard pin diff s/y", ""}},
	}, {
		name: "listing without pinning, tofu: trust_new_tools pins what a known server adds",
		listings: func() map[string]ServerListing {
			l := listingOf(tools(t, "x", "y"))
			l.TrustNewTools = true
			return one(l)
		}(),
		pins:   func(p []ledger.Pin) []ledger.Pin { return dropPin(p, "s", "y") },
		dryRun: true,
		want:   []seen{{"tool", "s", "y", "s__y", "pinned"}},
	}, {
		name:    "a server not listed now shows nothing",
		servers: []string{"s", "gone"},
		listings: map[string]ServerListing{
			"s": listingOf(tools(t, "x")),
		},
		want: []seen{{"tool", "s", "x", "s__x", "pinned"}},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			servers := tc.servers
			if servers == nil {
				servers = []string{"s"}
			}
			pins := pinnedAsListed(tc.listings)
			if tc.pins != nil {
				pins = tc.pins(pins)
			}
			v := ComputeView(ViewInput{Servers: servers, Listings: tc.listings, Pins: pins, Rules: rules,
				Schemas: pin.NewSchemaCache(pin.SchemaLimits{}, 0), Present: testPresenter{}, DryRunTOFU: tc.dryRun})
			got := seenIn(v)
			for _, w := range tc.want {
				i := slices.IndexFunc(got, func(s seen) bool { return s.kind == w.kind && s.server == w.server && s.key == w.key })
				if i < 0 {
					t.Errorf("%s %s/%s not in the report: %v", w.kind, w.server, w.key, got)
					continue
				}
				g := got[i]
				if !strings.HasPrefix(g.shown, w.shown) || (!strings.HasPrefix(w.shown, "hidden: ") && g.shown != w.shown) || g.pin != w.pin {
					t.Errorf("%s %s/%s: got %q (pin %q), want %q (pin %q)", w.kind, w.server, w.key, g.shown, g.pin, w.shown, w.pin)
				}
			}
			checkViewConsistent(t, v)
		})
	}
}

// checkViewConsistent checks that what the host is given agrees with the
// reports: each shown entry is in the exposed maps with what its handler
// needs, each withheld one in the hidden maps, and the signatures name
// exactly what is shown.
func checkViewConsistent(t *testing.T, v *View) {
	t.Helper()
	shown := 0
	for _, r := range v.Report {
		name := ExposedName(r.Server, r.Tool)
		if r.Exposed == "" {
			if h, ok := v.Known[name]; !ok || h.Why == "" {
				t.Errorf("withheld tool %s/%s not known by %s", r.Server, r.Tool, name)
			}
			continue
		}
		shown++
		e, ok := v.Exposed[r.Exposed]
		if !ok || e.Server != r.Server || e.Tool.Name != r.Tool || e.Schema == nil || e.Name != r.Exposed {
			t.Errorf("shown tool %s/%s: exposed entry %+v", r.Server, r.Tool, e)
		}
		if !strings.Contains(v.Sig, r.Exposed+"="+e.Tool.Digest()) {
			t.Errorf("signature %q lacks %s", v.Sig, r.Exposed)
		}
	}
	if shown != len(v.Exposed) {
		t.Errorf("%d tools reported shown, %d exposed", shown, len(v.Exposed))
	}
	byKind := map[string]pin.ItemKind{"prompt": pin.Prompts, "resource": pin.Resources, "template": pin.Templates}
	shown = 0
	for _, r := range v.Content.Report {
		kind := byKind[r.Kind]
		if r.Exposed == "" {
			if h, ok := v.Content.Hidden[kind][hostName(r.Server, pin.Item{Kind: kind, Key: r.Key}, false)]; !ok || h.Why == "" {
				t.Errorf("withheld %s %s/%s not in hidden", r.Kind, r.Server, r.Key)
			}
			continue
		}
		shown++
		e, ok := v.Content.Exposed[kind][r.Exposed]
		if !ok || e.Server != r.Server || e.Item.Key != r.Key || e.Host != r.Exposed {
			t.Errorf("shown %s %s/%s: exposed entry %+v", r.Kind, r.Server, r.Key, e)
		}
		if !strings.Contains(v.Content.Sig[kind], r.Exposed+"="+e.Item.Digest()) {
			t.Errorf("signature %q lacks %s", v.Content.Sig[kind], r.Exposed)
		}
	}
	n := 0
	for _, m := range v.Content.Exposed {
		n += len(m)
	}
	if shown != n {
		t.Errorf("%d items reported shown, %d exposed", shown, n)
	}
}

// Instructions reach hosts only from servers whose instructions are pinned
// as they are and carry no text that hides itself; a listing that failed
// is reported and shows nothing of its kind.
func TestComputeView_InstructionsAndFailures(t *testing.T) {
	l := func(instr string) ServerListing {
		sl := listingOf(tools(t, "x"), items(t, pin.Prompts, "x"))
		sl.Instructions = []byte(instr)
		return sl
	}
	listings := map[string]ServerListing{"a": l(`"use a"`), "b": l(`"use \u202eb"`), "c": l(`"use c"`), "d": l(`""`)}
	down := listings["a"]
	down.Items = map[pin.ItemKind][]pin.Item{}
	down.ItemErrs = map[pin.ItemKind]error{pin.Prompts: errors.New("prompts/list: boom")}
	listings["a"] = down
	pins := setPin(pinnedAsListed(listings), "c", InstructionsPin, ledger.PinChanged, "")
	v := ComputeView(ViewInput{Servers: []string{"a", "b", "c", "d"}, Listings: listings, Pins: pins, Rules: viewRules(t),
		Schemas: pin.NewSchemaCache(pin.SchemaLimits{}, 0), Present: testPresenter{}})
	if v.Instructions != "[a]\nuse a" {
		t.Errorf("instructions %q; want only a's", v.Instructions)
	}
	if len(v.InstructionsWithheld) != 1 || v.InstructionsWithheld[0].Server != "b" || !strings.Contains(v.InstructionsWithheld[0].Why, "U+202E") {
		t.Errorf("withheld instructions %+v; want b's, naming U+202E", v.InstructionsWithheld)
	}
	if _, ok := v.Exposed["b__x"]; !ok {
		t.Errorf("b's tools withheld for its instructions' text: %v", v.Report)
	}
	if _, ok := v.Exposed["c__x"]; ok {
		t.Error("c's tool shown while its instructions changed")
	}
	if !slices.Equal(v.Content.Failed, []string{"a: prompts/list: boom"}) {
		t.Errorf("failed %v", v.Content.Failed)
	}
	if _, ok := v.Content.Exposed[pin.Prompts]["a__x"]; ok {
		t.Error("a prompt shown from a listing that failed")
	}
	if _, ok := v.Content.Exposed[pin.Prompts]["d__x"]; !ok {
		t.Errorf("d's prompt not shown: %v", v.Content.Report)
	}
}

// explain's view from the pins alone: the pending definition stands for
// what the server lists, so a changed pin is withheld and a pinned one
// shown with its schema compiled.
func TestToolFromPins(t *testing.T) {
	rules := viewRules(t)
	listings := map[string]ServerListing{"s": listingOf(tools(t, "x", "nx", "changed", "fresh"))}
	pins := pinnedAsListed(listings)
	newer := tools(t, `{"name":"changed","description":"now different","inputSchema":{"type":"object"}}`)[0]
	for i := range pins {
		switch pins[i].Tool {
		case "changed":
			pins[i].State, pins[i].PendingDigest, pins[i].PendingRaw = ledger.PinChanged, newer.Digest(), newer.Raw
		case "fresh": // never accepted: only its pending definition is held
			pins[i].State, pins[i].PendingDigest, pins[i].PendingRaw = ledger.PinNew, pins[i].Digest, pins[i].Raw
			pins[i].Digest, pins[i].Raw = "", nil
		}
	}
	for _, c := range []struct {
		tool, exposed, hidden string
		listed                bool
	}{
		{"x", "s__x", "", true},
		{"nx", "", "no rule matches it", true},
		{"changed", "", "pin changed: see mcp-guard pin diff s/changed", true},
		{"fresh", "", "pin new: see mcp-guard pin diff s/fresh", true},
		{"never", "", "", false},
	} {
		r, schema, listed := ToolFromPins([]string{"s"}, pins, rules, testPresenter{}, "s", c.tool)
		if listed != c.listed || r.Exposed != c.exposed || r.Hidden != c.hidden || (schema != nil) != (c.exposed != "") {
			t.Errorf("%s: got %+v schema %v listed %v; want exposed %q hidden %q listed %v", c.tool, r, schema != nil, listed, c.exposed, c.hidden, c.listed)
		}
	}
	// A server no longer configured shows nothing.
	if r, _, _ := ToolFromPins(nil, pins, rules, testPresenter{}, "s", "x"); r.Exposed != "" {
		t.Errorf("unconfigured server's tool shown: %+v", r)
	}
}
