package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"sync"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/mcp-guard/mcp-guard/gate"
	"github.com/mcp-guard/mcp-guard/internal/canon"
	"github.com/mcp-guard/mcp-guard/ledger"
)

// Options configure a Proxy.
type Options struct {
	Upstreams []UpstreamSpec
	Gate      *gate.Gate
	Ledger    *ledger.Ledger  // every call is recorded here before it is forwarded
	Session   *ledger.Session // this process's lease in the ledger
	Limits    Limits
	LogDir    string // per-server stderr logs go here
	Version   string // mcp-guard's version, shown to hosts and upstreams
	Log       *slog.Logger
}

// Proxy is mcp-guard between one host and its upstreams.
type Proxy struct {
	opts    Options
	log     *slog.Logger
	srv     *server.MCPServer
	ups     map[string]*upstream
	exposed map[string]exposed
	refused []refusal
	failed  map[string]error // upstreams that did not start, and why
	report  []ToolReport
	known   map[string]hiddenTool // hidden tools by the name they would have had
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
	Rule         int    // first rule that could match it (0: none)
	Class        string
	Action       string
	Digest       string // SHA-256 of the tool's raw bytes
}

// New starts every upstream, lists their tools and decides which the host
// will see. An upstream that fails to start is reported and left out; the
// others are served.
func New(ctx context.Context, opts Options) (*Proxy, error) {
	if opts.Gate == nil || opts.Ledger == nil || opts.Session == nil {
		return nil, errors.New("proxy: a gate, a ledger and a session are required")
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	opts.Limits = opts.Limits.withDefaults()
	p := &Proxy{
		opts:    opts,
		log:     opts.Log,
		ups:     map[string]*upstream{},
		exposed: map[string]exposed{},
		failed:  map[string]error{},
		known:   map[string]hiddenTool{},
	}
	hooks := &server.Hooks{}
	hooks.AddOnError(func(ctx context.Context, id any, method mcp.MCPMethod, message any, err error) {
		if method == mcp.MethodToolsCall && errors.Is(err, server.ErrToolNotFound) {
			p.recordUnknown(ctx, message)
		}
	})
	p.srv = server.NewMCPServer("mcp-guard", opts.Version,
		server.WithToolCapabilities(true),
		server.WithRecovery(),
		server.WithHooks(hooks),
	)

	type started struct {
		spec UpstreamSpec
		u    *upstream
		err  error
	}
	results := make([]started, len(opts.Upstreams))
	var wg sync.WaitGroup
	for i, spec := range opts.Upstreams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			u, err := startUpstream(ctx, spec, opts.Limits, opts.LogDir, opts.Version, opts.Log)
			results[i] = started{spec, u, err}
		}()
	}
	wg.Wait()

	var cands, all []candidate
	for _, r := range results {
		if r.err != nil {
			p.failed[r.spec.Name] = r.err
			p.log.Error("upstream not started", "server", r.spec.Name, "err", r.err)
			continue
		}
		p.ups[r.spec.Name] = r.u
		lctx, cancel := context.WithTimeout(ctx, opts.Limits.StartTimeout)
		tools, err := r.u.listTools(lctx)
		cancel()
		if err != nil {
			p.failed[r.spec.Name] = err
			p.log.Error("upstream tools not listed; none of its tools are exposed", "server", r.spec.Name, "err", err)
			continue
		}
		for _, t := range tools {
			all = append(all, candidate{server: r.spec.Name, tool: t})
			if _, ok := opts.Gate.Exposable(r.spec.Name, t.Name); !ok {
				p.refused = append(p.refused, refusal{r.spec.Name, t.Name, "no rule matches it"})
				continue
			}
			if t.TaskSupport == "required" {
				// mcp-guard offers hosts no tasks, so such a tool could never be called.
				p.refused = append(p.refused, refusal{r.spec.Name, t.Name, "it can only run as a task, and mcp-guard does not relay tasks"})
				continue
			}
			cands = append(cands, candidate{server: r.spec.Name, tool: t})
		}
	}
	exp, refused := exposeAll(cands)
	p.refused = append(p.refused, refused...)
	var tools []server.ServerTool
	for _, e := range exp {
		t, err := hostTool(e)
		if err != nil {
			p.refused = append(p.refused, refusal{e.Server, e.Tool.Name, err.Error()})
			continue
		}
		p.exposed[e.Name] = e
		tools = append(tools, server.ServerTool{Tool: t, Handler: p.handler(e)})
	}
	for _, r := range p.refused {
		p.log.Info("tool not exposed", "server", r.Server, "tool", r.Tool, "reason", r.Reason)
	}
	p.buildReport(all)
	p.srv.SetTools(tools...)
	p.log.Info("proxy ready", "upstreams", len(p.ups), "failed", len(p.failed), "exposed", len(p.exposed), "hidden", len(p.refused))
	return p, nil
}

// Exposed lists the exposed tool names, sorted.
func (p *Proxy) Exposed() []string {
	names := make([]string, 0, len(p.exposed))
	for n := range p.exposed {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
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

// ServeStdio serves one host on in/out until in ends or ctx is done. A host
// line longer than the message limit ends the session.
func (p *Proxy) ServeStdio(ctx context.Context, in io.Reader, out io.Writer) error {
	ss := server.NewStdioServer(p.srv)
	server.WithWorkerPoolSize(64)(ss)
	server.WithQueueSize(1024)(ss)
	ss.SetErrorLogger(slog.NewLogLogger(p.log.Handler(), slog.LevelWarn))
	err := ss.Listen(ctx, NewLimitedLineReader(in, p.opts.Limits.MessageBytes), out)
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// Close stops every upstream and its process group.
func (p *Proxy) Close() {
	var wg sync.WaitGroup
	for _, u := range p.ups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			u.Close()
		}()
	}
	wg.Wait()
}

func (p *Proxy) buildReport(all []candidate) {
	why := map[[2]string]string{}
	for _, r := range p.refused {
		why[[2]string{r.Server, r.Tool}] = r.Reason
	}
	for _, c := range all {
		r := ToolReport{Server: c.server, Tool: c.tool.Name, Digest: c.tool.Digest()}
		if m, ok := p.opts.Gate.Exposable(c.server, c.tool.Name); ok {
			r.Rule, r.Class, r.Action = m.Rule, string(m.Class), string(m.Action)
		}
		name := ExposedName(c.server, c.tool.Name)
		if e, ok := p.exposed[name]; ok && e.Server == c.server && e.Tool.Name == c.tool.Name {
			r.Exposed = name
		} else {
			r.Hidden = why[[2]string{c.server, c.tool.Name}]
			p.known[name] = hiddenTool{c.server, c.tool.Name, r.Hidden}
		}
		p.report = append(p.report, r)
	}
}

// Tools reports every tool the upstreams listed and what became of it.
func (p *Proxy) Tools() []ToolReport { return p.report }

// Failed reports the upstreams that did not start or list their tools.
func (p *Proxy) Failed() map[string]error { return p.failed }

// recordUnknown records a call to a name the host was never shown (or that
// was withdrawn) before mcp-go answers it with -32602. Nothing was forwarded.
func (p *Proxy) recordUnknown(ctx context.Context, message any) {
	r, ok := message.(*mcp.CallToolRequest)
	if !ok {
		return
	}
	start := ledger.CallStart{
		SessionID: p.opts.Session.ID(),
		Exposed:   r.Params.Name,
		Decision:  "unknown_tool",
		Reason:    "no tool of that name is exposed",
	}
	if e, ok := p.known[r.Params.Name]; ok {
		start.Server, start.Tool = e.server, e.tool
		start.Reason = "the tool is not exposed: " + e.why
	}
	if args := r.Params.RawArguments; len(args) > 0 {
		if canon.Check(args) == nil {
			start.Args = args
		} else {
			start.ArgsInvalid = args
		}
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	id, err := p.opts.Ledger.RecordCall(rctx, start)
	if err != nil {
		p.log.Error("refused call not recorded", "tool", r.Params.Name, "err", err)
		return
	}
	p.log.Warn("call refused: no such tool is exposed", "id", id, "tool", r.Params.Name, "code", codeInvalidParams)
}
