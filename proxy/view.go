package proxy

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcp-guard/mcp-guard/gate"
	"github.com/mcp-guard/mcp-guard/ledger"
	"github.com/mcp-guard/mcp-guard/pin"
)

// view is what the host sees at one moment, and why the rest is hidden.
type view struct {
	exposed map[string]exposed    // by exposed name
	known   map[string]hiddenTool // hidden tools by the name they would have had
	report  []ToolReport
	sig     string // identifies the exposed set; the host is told only when it changes
	// instructions is what a host's initialize result carries: the
	// instructions of the servers listed now whose instructions are pinned
	// as they are, each headed by its server's name.
	instructions string
}

// hiddenTool is an upstream tool the host is not shown, and why.
type hiddenTool struct {
	server, tool, why string
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

// instructionsTool is the pin name of a server's instructions.
const instructionsTool = ""

// digestOf is the hex SHA-256 of raw bytes.
func digestOf(raw []byte) string {
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])
}

// check returns why a listed tool must be refused whatever the pins say:
// text that can hide itself from the operator, or an inputSchema or
// outputSchema that does not compile within its caps. Otherwise it returns
// both schemas compiled (output nil when the tool has none).
func (p *Proxy) check(t pin.Tool) (in, out *pin.Schema, why string) {
	if pin.IsItemPinName(t.Name) {
		return nil, nil, "refused: a tool name may not start with prompt:, resource: or template: (the pin names of prompts and resources)"
	}
	if probs := pin.CheckText(t); len(probs) > 0 {
		return nil, nil, "refused: " + pin.DescribeProblems(probs)
	}
	in, err := p.schemas.Compile(t.InputSchema)
	if err != nil {
		return nil, nil, "refused: inputSchema: " + err.Error()
	}
	if len(t.OutputSchema) > 0 {
		if out, err = p.schemas.CompileOutput(t.OutputSchema); err != nil {
			return nil, nil, "refused: outputSchema: " + err.Error()
		}
	}
	return in, out, ""
}

// observe records a listing in the ledger's pins: the server's instructions
// and every tool that passes the checks (a refused definition is never
// pinned). What was never seen is pinned at once only when trust says why
// (trustNew); otherwise it waits for the operator as "new".
func (p *Proxy) observe(ctx context.Context, server string, l listing, trust string) {
	if p.opts.DryRun {
		return
	}
	if _, err := p.opts.Ledger.ObservePinAs(ctx, server, instructionsTool, digestOf(l.instructions), l.instructions, trust); err != nil {
		p.log.Error("instructions not pinned", "server", server, "err", err)
	}
	for _, t := range l.tools {
		if _, _, why := p.check(t); why != "" || l.dups[t.Name] {
			continue
		}
		pn, err := p.opts.Ledger.ObservePinAs(ctx, server, t.Name, t.Digest(), t.Raw, trust)
		if err != nil {
			p.log.Error("tool not pinned", "server", server, "tool", t.Name, "err", err)
		} else if pn.State == ledger.PinNew {
			p.log.Warn("the server lists a tool never accepted; it waits for the operator", "server", server, "tool", t.Name,
				"see", "mcp-guard pin diff "+server+"/"+t.Name)
		}
	}
}

// refresh recomputes what the host sees from the latest listings and the
// ledger's pins, and gives the host the new tool list in one batch (one
// list_changed) when it differs.
func (p *Proxy) refresh(ctx context.Context) error {
	p.refreshMu.Lock()
	defer p.refreshMu.Unlock()
	pins, err := p.opts.Ledger.Pins(ctx, "")
	if err != nil {
		return err
	}
	byName := map[[2]string]ledger.Pin{}
	for _, pn := range pins {
		byName[[2]string{pn.Server, pn.Tool}] = pn
	}
	p.mu.RLock()
	live := make(map[string]listing, len(p.live))
	for k, v := range p.live {
		live[k] = v
	}
	p.mu.RUnlock()

	v := &view{exposed: map[string]exposed{}, known: map[string]hiddenTool{}}
	var cands []candidate
	why := map[[2]string]string{}
	state := map[[2]string]string{}
	for _, server := range p.order {
		l, ok := live[server]
		if !ok {
			continue
		}
		serverHold := p.serverHold(server, l, byName)
		if serverHold == "" {
			v.instructions = p.addInstructions(v.instructions, server, l.instructions)
		}
		for _, t := range l.tools {
			key := [2]string{server, t.Name}
			schema, output, refused := p.check(t)
			if l.dups[t.Name] {
				schema, output, refused = nil, nil, fmt.Sprintf("refused: the server lists more than one tool named %q, so which one a call reaches is ambiguous", t.Name)
			}
			pn, pinned := byName[key]
			if !pinned && p.dryRunPins(server, byName) && refused == "" {
				// what serve would do: pin it at first contact (or with trust_new_tools)
				pn, pinned = ledger.Pin{Server: server, Tool: t.Name, State: ledger.PinPinned, Digest: t.Digest()}, true
			}
			switch {
			case refused != "":
				state[key] = "refused"
			case pinned:
				state[key] = pn.State
			}
			if _, ok := p.opts.Gate.Exposable(server, t.Name); !ok {
				why[key] = "no rule matches it"
				continue
			}
			if refused != "" {
				why[key] = refused
				continue
			}
			if t.TaskSupport == "required" {
				// mcp-guard offers hosts no tasks, so such a tool could never be called.
				why[key] = "it can only run as a task, and mcp-guard does not relay tasks"
				continue
			}
			if serverHold != "" {
				why[key] = serverHold
				continue
			}
			if !pinned || pn.State != ledger.PinPinned || pn.Digest != t.Digest() {
				st := "not pinned"
				if pinned {
					st = "pin " + pn.State
				}
				why[key] = fmt.Sprintf("%s: see mcp-guard pin diff %s/%s", st, server, t.Name)
				continue
			}
			cands = append(cands, candidate{server: server, tool: t, schema: schema, output: output})
		}
	}
	exp, refusedNames := exposeAll(cands)
	for _, r := range refusedNames {
		why[[2]string{r.Server, r.Tool}] = r.Reason
	}
	var tools []server.ServerTool
	var sig []string
	for _, e := range exp {
		t, err := hostTool(e)
		if err != nil {
			why[[2]string{e.Server, e.Tool.Name}] = err.Error()
			continue
		}
		v.exposed[e.Name] = e
		sig = append(sig, e.Name+"="+e.Tool.Digest())
		tools = append(tools, server.ServerTool{Tool: t, Handler: p.handler(e)})
	}
	sort.Strings(sig)
	v.sig = strings.Join(sig, ",")
	for _, server := range p.order {
		for _, t := range live[server].tools {
			key := [2]string{server, t.Name}
			r := ToolReport{Server: server, Tool: t.Name, Digest: t.Digest(), PinState: state[key]}
			if m, ok := p.opts.Gate.Exposable(server, t.Name); ok {
				r.Rule, r.Class, r.Action = m.Rule, string(m.Class), string(m.Action)
			}
			name := ExposedName(server, t.Name)
			if e, ok := v.exposed[name]; ok && e.Server == server && e.Tool.Name == t.Name {
				r.Exposed = name
			} else {
				r.Hidden = why[key]
				v.known[name] = hiddenTool{server, t.Name, r.Hidden}
			}
			v.report = append(v.report, r)
		}
	}

	p.mu.Lock()
	old := p.view
	p.view = v
	p.mu.Unlock()
	if old.exposed == nil || old.sig != v.sig {
		p.srv.SetTools(tools...) // one batch: one list_changed to the host
		for _, r := range v.report {
			if r.Hidden != "" {
				p.log.Info("tool not exposed", "server", r.Server, "tool", r.Tool, "reason", r.Hidden)
			}
		}
		p.log.Info("tools exposed", "exposed", len(v.exposed), "hidden", len(v.report)-len(v.exposed), "upstreams", len(live))
	}
	p.refreshContent(byName, live) // prompts and resources (content.go)
	return nil
}

// addInstructions appends a server's instructions (raw JSON string) to
// those the host is given, unless they are empty or carry text that can
// hide itself from the operator who pinned them.
func (p *Proxy) addInstructions(to, server string, raw []byte) string {
	var text string
	if json.Unmarshal(raw, &text) != nil || text == "" {
		return to
	}
	if probs := pin.CheckText(pin.Tool{Description: text}); len(probs) > 0 {
		p.log.Warn("server instructions not given to hosts", "server", server, "reason", pin.DescribeProblems(probs))
		return to
	}
	if to != "" {
		to += "\n\n"
	}
	return to + "[" + server + "]\n" + text
}

// serverHold says why nothing of a server is exposed while its instructions
// are not pinned as they are now, or "" when they are.
func (p *Proxy) serverHold(server string, l listing, byName map[[2]string]ledger.Pin) string {
	ip, ok := byName[[2]string{server, instructionsTool}]
	if !ok && p.dryRunPins(server, byName) {
		ip, ok = ledger.Pin{State: ledger.PinPinned, Digest: digestOf(l.instructions)}, true
	}
	if !ok || ip.State != ledger.PinPinned || ip.Digest != digestOf(l.instructions) {
		st := "unpinned"
		if ok {
			st = ip.State
		}
		return fmt.Sprintf("the server's instructions are %s: see mcp-guard pin diff %s/", st, server)
	}
	return ""
}

// dryRunPins reports whether, listing without writing pins (mcp-guard
// tools), what server lists unpinned would be pinned by serve at once: in
// tofu mode, at its first contact (no pin of it recorded) or with
// trust_new_tools.
func (p *Proxy) dryRunPins(server string, byName map[[2]string]ledger.Pin) bool {
	if !p.opts.DryRun || !p.opts.PinTOFU {
		return false
	}
	if p.spec(server).TrustNewTools {
		return true
	}
	for k := range byName {
		if k[0] == server {
			return false
		}
	}
	return true
}

// current returns the exposed tool of that name in the current view.
func (p *Proxy) current(name string) (exposed, bool) {
	p.mu.RLock()
	defer p.mu.RUnlock()
	e, ok := p.view.exposed[name]
	return e, ok
}

// hostTool builds the tool the host sees from the upstream's raw definition.
// mcp-go re-encodes it (sorted keys, fixed annotation fields); what is pinned
// and checked is always the upstream's raw bytes.
func hostTool(e exposed) (mcp.Tool, error) {
	t := mcp.Tool{
		Name:            e.Name,
		Title:           e.Tool.Title,
		Description:     e.Tool.Description,
		RawInputSchema:  e.Tool.InputSchema,
		RawOutputSchema: e.Tool.OutputSchema,
	}
	if len(e.Tool.Annotations) > 0 {
		if err := json.Unmarshal(e.Tool.Annotations, &t.Annotations); err != nil {
			return mcp.Tool{}, fmt.Errorf("annotations: %w", err)
		}
	}
	if len(e.Tool.Meta) > 0 {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(e.Tool.Meta, &fields); err != nil {
			return mcp.Tool{}, fmt.Errorf("_meta: %w", err)
		}
		t.Meta = &mcp.Meta{AdditionalFields: rawFields(fields)}
	}
	if err := mcp.ValidateParamHeaderAnnotations(&t); err != nil {
		return mcp.Tool{}, fmt.Errorf("inputSchema: %w", err)
	}
	return t, nil
}

func rawFields(m map[string]json.RawMessage) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// recordUnknown records a call to a name the host was never shown (or that
// was withdrawn) before mcp-go answers it with -32602. Nothing was forwarded.
func (p *Proxy) recordUnknown(ctx context.Context, message any) {
	r, ok := message.(*mcp.CallToolRequest)
	if !ok {
		return
	}
	p.recordRefused(ctx, r.Params.Name, r.Params.RawArguments, nil)
}

// recordUnreadable records a tools/call mcp-go could not read into its
// request type (an argument number beyond a float64, a field of the wrong
// type): mcp-go refuses it with -32600 and nothing is forwarded, but it
// still leaves a row, its arguments kept verbatim out of band. A request
// without a tool name calls nothing: it is only logged.
func (p *Proxy) recordUnreadable(ctx context.Context, raw json.RawMessage, readErr error) {
	var m struct {
		Params struct {
			Name      json.RawMessage `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"params"`
	}
	var name string
	if json.Unmarshal(raw, &m) != nil || json.Unmarshal(m.Params.Name, &name) != nil {
		p.log.Warn("unreadable tools/call refused", "err", readErr)
		return
	}
	p.recordRefused(ctx, name, m.Params.Arguments, readErr)
}

// recordRefused records a tools/call that mcp-go refuses before mcp-guard's
// handler sees it: a name not exposed, or (readErr set) a request it could
// not read.
func (p *Proxy) recordRefused(ctx context.Context, name string, args json.RawMessage, readErr error) {
	if name == "" {
		p.log.Warn("tools/call without a tool name refused")
		return
	}
	start := p.refusedStart(ctx, name, args, readErr)
	id, err := p.pipe.Record(ctx, start)
	if err != nil {
		p.log.Error("refused call not recorded", "tool", name, "err", err)
		return
	}
	p.log.Warn("call refused before the gate", "id", id, "tool", name, "decision", start.Decision, "reason", start.Reason)
}

// refusedStart is what the ledger records of a tools/call refused before
// the gate decided it.
func (p *Proxy) refusedStart(ctx context.Context, name string, args json.RawMessage, readErr error) ledger.CallStart {
	start := ledger.CallStart{
		SessionID: p.hostOf(ctx).lease.ID(),
		Exposed:   name,
		Decision:  "unknown_tool",
		Reason:    "no tool of that name is exposed",
	}
	p.mu.RLock()
	h, known := p.view.known[name]
	p.mu.RUnlock()
	if known {
		start.Server, start.Tool = h.server, h.tool
		start.Reason = "the tool is not exposed: " + h.why
	}
	if readErr != nil {
		if e, ok := p.current(name); ok {
			start.Server, start.Tool, start.PinDigest = e.Server, e.Tool.Name, e.Tool.Digest()
			start.Decision, start.Reason = "invalid", "the request could not be read: "+readErr.Error()
		} else {
			start.Reason += "; the request could not be read either: " + readErr.Error()
		}
	}
	if len(args) > 0 {
		if readErr == nil && gate.Recordable(args) {
			start.Args = args
		} else {
			start.ArgsInvalid = args
		}
	}
	return start
}
