package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/mcp-guard/mcp-guard/classify"
	"github.com/mcp-guard/mcp-guard/internal/fspath"
)

// Config is the operator's TOML file, decoded strictly and checked: what
// Load and Parse return. The fields hold the file as written (paths
// expanded, pin.mode defaulted); the methods give what follows from it.
type Config struct {
	// StartupWait is how long the host's initialize waits for upstreams
	// to start and list; those not ready by then join later.
	StartupWait *string         `toml:"startup_wait"`
	Ledger      LedgerConfig    `toml:"ledger"`
	Pin         PinConfig       `toml:"pin"`
	Limits      LimitsConfig    `toml:"limits"`
	Notify      NotifyConfig    `toml:"notify"`
	Export      ExportConfig    `toml:"export"`
	Secrets     SecretsConfig   `toml:"secrets"`
	Auth        AuthConfig      `toml:"auth"`
	Approvals   ApprovalsConfig `toml:"approvals"`
	Servers     []ServerConfig  `toml:"server"`
	Rules       []RuleConfig    `toml:"rule"`
	// Flow is every [[flow]]; FlowsOff is flows = [], which turns the
	// default flows off (any other value is refused).
	Flow     []FlowConfig `toml:"flow"`
	FlowsOff *[]any       `toml:"flows"`

	// Filled in by Parse.
	path        string
	limits      Limits
	leaseTTL    time.Duration
	startupWait time.Duration
	witness     Witness
	rules       *classify.Rules
	flows       *classify.Flows
	askIn       []string // where each rule's held calls are asked about
	warnings    []string
	pos         *positions
}

// LedgerConfig is the [ledger] table.
type LedgerConfig struct {
	Path     string  `toml:"path"`
	LeaseTTL *string `toml:"lease_ttl"`
	// Witness names where chain heads are committed outside the file
	// (nil: the platform's default; empty: none).
	Witness         *[]string `toml:"witness"`
	WitnessEvery    *int64    `toml:"witness_every"`
	WitnessInterval *string   `toml:"witness_interval"`
	WitnessRequired bool      `toml:"witness_required"`
}

// PinConfig is the [pin] table.
type PinConfig struct {
	Mode string `toml:"mode"`
}

// LimitsConfig is the [limits] table. Pointers tell "absent" (take the
// default) from 0 (refused).
type LimitsConfig struct {
	CallsPerSession       *int64  `toml:"calls_per_session"`
	CallsPerToolPerMinute *int64  `toml:"calls_per_tool_per_minute"`
	IdenticalCallRepeats  *int64  `toml:"identical_call_repeats"`
	ConsecutiveDenials    *int64  `toml:"consecutive_denials"`
	PendingApprovals      *int64  `toml:"pending_approvals"`
	ResultBytes           *int64  `toml:"result_bytes"`
	MessageBytes          *int64  `toml:"message_bytes"`
	CallTimeout           *string `toml:"call_timeout"`
	ApprovalWait          *string `toml:"approval_wait"`
	GrantTTL              *string `toml:"grant_ttl"`
	StartTimeout          *string `toml:"start_timeout"`
	RetryWait             *string `toml:"retry_wait"`
	RetryWaitMax          *string `toml:"retry_wait_max"`
	RelistInterval        *string `toml:"relist_interval"`
}

// ServerConfig is one [[server]].
type ServerConfig struct {
	Name    string            `toml:"name"`
	Command []string          `toml:"command"`
	Env     map[string]string `toml:"env"`
	PassEnv []string          `toml:"pass_env"`
	// SecretEnv names env and pass_env variables whose values are secrets
	// whatever their names; PublicEnv names ones that are not, though their
	// names say so (secrets.IsSecretName).
	SecretEnv []string `toml:"secret_env"`
	PublicEnv []string `toml:"public_env"`
	Cwd       string   `toml:"cwd"`
	URL       string   `toml:"url"`

	// For url servers: the credential, sent as "Authorization: Bearer", and
	// other headers. Values are never printed, logged or recorded.
	TokenEnv  string            `toml:"token_env"`
	TokenFile string            `toml:"token_file"`
	Headers   map[string]string `toml:"headers"`
	// OAuth: the server signs in per the MCP authorization spec (mcp-guard
	// auth NAME); mcp-guard holds and refreshes the token.
	OAuth *OAuthConfig `toml:"oauth"`

	// What the server may ask of the host; nothing unless set. Roots are
	// the only roots it is told of (file URIs or paths), never the host's.
	AllowSampling    ClientAccess `toml:"allow_sampling"`
	AllowElicitation ClientAccess `toml:"allow_elicitation"`
	Roots            []string     `toml:"roots"`

	// TrustNewTools pins and exposes at once what the server adds after its
	// first listing (pin mode tofu); by default it waits for pin accept.
	TrustNewTools bool `toml:"trust_new_tools"`

	// Namespace false exposes the server's tools and prompts under their
	// own names instead of "<name>__<tool>": honoured only when the server
	// is served alone (serve --server NAME, or a one-server config); see
	// CheckNamespace. Unset means true.
	Namespace *bool `toml:"namespace"`

	// Sandbox confines the server's process (stdio servers only).
	Sandbox *SandboxConfig `toml:"sandbox"`

	// Protocol is the MCP revision mcp-guard speaks to the server:
	// "legacy" (the default: initialize at 2025-11-25), "2026-07-28"
	// (stateless: server/discover, no initialize) or "auto" (server/discover
	// first, initialize when the server does not answer it), over stdio or
	// streamable HTTP.
	Protocol string `toml:"protocol"`
}

// Namespaced reports whether the server's tools and prompts are exposed
// as "<name>__<tool>" (namespace, default true).
func (s ServerConfig) Namespaced() bool { return s.Namespace == nil || *s.Namespace }

// CheckNamespace says why c's servers cannot be served together as they
// are: a server with namespace = false keeps its own names only when it is
// served alone, since two servers' names could collide and a name would no
// longer say which server a call reaches. Call it on the servers a command
// serves (after serve --server has picked one); LoadServing does.
func (c *Config) CheckNamespace() error {
	if errs := c.namespaceErrors(); errs != nil {
		return newError(c.path, c.pos, errs)
	}
	return nil
}

func (c *Config) namespaceErrors() []error {
	if len(c.Servers) <= 1 {
		return nil
	}
	var errs []error
	for i, s := range c.Servers {
		if !s.Namespaced() {
			errs = append(errs, fmt.Errorf("server[%d] (%s).namespace: false is honoured only when %s is served alone: "+
				"serve --server %s (as wrap --per-server starts it; check it with check --server %s), or a config with one [[server]]; "+
				"this config serves %d servers together", i+1, s.Name, s.Name, s.Name, s.Name, len(c.Servers)))
		}
	}
	return errs
}

// Only keeps the [[server]] named name alone, as serve --server runs it
// (rules for the others go unused); ok is false when there is none.
func (c *Config) Only(name string) (names []string, ok bool) {
	for _, s := range c.Servers {
		if s.Name == name {
			c.Servers = []ServerConfig{s}
			return nil, true
		}
		names = append(names, s.Name)
	}
	return names, false
}

// RuleConfig is one [[rule]]. It names exactly one of tool, prompt and
// resource; class is required for tool rules only.
type RuleConfig struct {
	Server   string                    `toml:"server"`
	Tool     string                    `toml:"tool"`
	Prompt   string                    `toml:"prompt"`
	Resource string                    `toml:"resource"`
	Class    string                    `toml:"class"`
	Action   string                    `toml:"action"`
	Reason   string                    `toml:"reason"`
	When     map[string]map[string]any `toml:"when"`
	Labels   []string                  `toml:"labels"`
	AskIn    string                    `toml:"ask_in"`
}

// FlowConfig is one [[flow]].
type FlowConfig struct {
	From   string   `toml:"from"`
	To     []string `toml:"to"`
	Action string   `toml:"action"`
	Reason string   `toml:"reason"`
}

// Error is a config that cannot be used: every problem found, each
// located where it can be. The CLI exits 2 for it.
type Error struct {
	path     string
	what     string // "" for a config; "test file" for LoadCases'
	problems []Problem
}

// Problem is one thing wrong with a config: where it is written (Line and
// Col 1-based; 0 when it is not in one place, such as a missing [[rule]])
// and what is wrong.
type Problem struct {
	Line, Col int
	Msg       string
}

// newError locates each of errs in the file scanned into pos (nil: the
// file was not read). Each error names what it is about first, as
// "server[2] (fs).command: ..." or "rule[3].when.\"/path\": ..."; that
// key, or the nearest enclosing one written in the file, is its place.
func newError(path string, pos *positions, errs []error) *Error {
	e := &Error{path: path}
	for _, err := range errs {
		pr := Problem{Msg: err.Error()}
		if pos != nil {
			if off, ok := pos.find(messageKey(pr.Msg)); ok {
				pr.Line, pr.Col = pos.lineCol(off)
			}
		}
		e.problems = append(e.problems, pr)
	}
	// In the file's order, those without a place last.
	sort.SliceStable(e.problems, func(i, j int) bool {
		a, b := e.problems[i], e.problems[j]
		if (a.Line == 0) != (b.Line == 0) {
			return b.Line == 0
		}
		return a.Line < b.Line || a.Line == b.Line && a.Col < b.Col
	})
	return e
}

// Error is a header line, then each problem on a line of its own as
// FILE:LINE:COL: what is wrong (FILE: when it has no place).
func (e *Error) Error() string {
	var b strings.Builder
	what := e.what
	if what == "" {
		what = "config"
	}
	fmt.Fprintf(&b, "%s: invalid %s", e.path, what)
	if len(e.problems) > 1 {
		fmt.Fprintf(&b, ": %d problems", len(e.problems))
	}
	for _, p := range e.problems {
		if p.Line > 0 {
			fmt.Fprintf(&b, "\n%s:%d:%d: %s", e.path, p.Line, p.Col, p.Msg)
		} else {
			fmt.Fprintf(&b, "\n%s: %s", e.path, p.Msg)
		}
	}
	return b.String()
}

// Problems are the problems found, in the file's order; those with no
// place come last.
func (e *Error) Problems() []Problem { return append([]Problem(nil), e.problems...) }

// ServerNames are the configured servers' names, in config order.
func (c *Config) ServerNames() []string {
	out := make([]string, len(c.Servers))
	for i, s := range c.Servers {
		out[i] = s.Name
	}
	return out
}

// Path is the file the config was read from.
func (c *Config) Path() string { return c.path }

// Warnings are what the config allows but the operator should hear about:
// rule lints, plain http:// to another machine, path patterns through a
// symbolic link.
func (c *Config) Warnings() []string { return c.warnings }

// LimitsInForce are the [limits], defaults filled in.
func (c *Config) LimitsInForce() Limits { return c.limits }

// LeaseTTL is ledger.lease_ttl (default 15s).
func (c *Config) LeaseTTL() time.Duration { return c.leaseTTL }

// StartupWaitInForce is startup_wait (default 5s): how long the host's
// initialize waits for upstreams.
func (c *Config) StartupWaitInForce() time.Duration { return c.startupWait }

// CompiledRules are the [[rule]]s, compiled.
func (c *Config) CompiledRules() *classify.Rules { return c.rules }

// FlowsInForce are the flows the gate applies: the [[flow]]s, or the
// defaults when there is none and no flows = [], and the reserved secret
// flow unless a [[flow]] starts from secret.
func (c *Config) FlowsInForce() *classify.Flows { return c.flows }

// LocalServers names the stdio servers (command, not url): they open paths
// on this machine, so path rules on them also decide the path with its
// symbolic links followed (gate.LocalServers).
func (c *Config) LocalServers() []string {
	var local []string
	for _, s := range c.Servers {
		if s.URL == "" {
			local = append(local, s.Name)
		}
	}
	return local
}

// ValidServerName reports whether name can name a [[server]]: 1-32 letters,
// digits, '-' or '_', starting and ending with a letter or digit, without
// "__" (which separates the server from the tool in exposed names).
func ValidServerName(name string) bool {
	return serverNameRE.MatchString(name) && !strings.Contains(name, "__")
}

var serverNameRE = regexp.MustCompile(`^[a-zA-Z0-9]([a-zA-Z0-9_-]{0,30}[a-zA-Z0-9])?$`)

var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Load reads and checks the config at path; every problem found is
// reported, located, in one *Error. env looks up mcp-guard's own
// environment (for ~, $HOME and $XDG_* in paths).
func Load(path string, env EnvFunc) (*Config, error) {
	return load(path, env, false, "")
}

// LoadServing is Load for a command that serves the config's servers (serve,
// check): with only set (serve --server), that server alone. Beyond what Load
// checks, namespace = false is refused on a server served with others
// (CheckNamespace), reported with every other problem. An only that names
// no server is not checked here: Only says so.
func LoadServing(path string, env EnvFunc, only string) (*Config, error) {
	return load(path, env, true, only)
}

func load(path string, env EnvFunc, serving bool, only string) (*Config, error) {
	src, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		err = errors.New("no config file here: write one with mcp-guard init, or name one with --config or $MCP_GUARD_CONFIG")
	}
	if err != nil {
		return nil, newError(path, nil, []error{err})
	}
	return parse(path, string(src), env, serving, only)
}

// maxConfigBytes and maxConfigNesting bound what the TOML decoder is given:
// its cost grows faster than linearly with nesting.
const (
	maxConfigBytes   = 1 << 20
	maxConfigNesting = 32
)

func parse(path, src string, env EnvFunc, serving bool, only string) (*Config, error) {
	if len(src) > maxConfigBytes {
		return nil, newError(path, nil, []error{fmt.Errorf("the file is %d bytes; a config may be at most %d", len(src), maxConfigBytes)})
	}
	if line, ok := nestingWithin(src, maxConfigNesting); !ok {
		return nil, &Error{path: path, problems: []Problem{{Line: line, Col: 1,
			Msg: fmt.Sprintf("arrays and inline tables nest more than %d levels", maxConfigNesting)}}}
	}
	var c Config
	md, err := toml.Decode(src, &c)
	if err != nil {
		// The decoder stops at the first error: one problem.
		var pe toml.ParseError
		if errors.As(err, &pe) {
			// Its line is sometimes 0; its offset is always set.
			line, col := (&positions{src: src}).lineCol(pe.Position.Start)
			return nil, &Error{path: path, problems: []Problem{{Line: line, Col: col, Msg: pe.Message}}}
		}
		return nil, typeError(path, src, err)
	}
	pos := scanPositions(src)
	var errs []error
	if und := md.Undecoded(); len(und) > 0 {
		var generic map[string]any
		_, _ = toml.Decode(src, &generic)
		keys := locateKeys(generic, und)
		for i, k := range keys {
			if i == 20 {
				errs = append(errs, fmt.Errorf("... and %d more unknown keys", len(keys)-20))
				break
			}
			errs = append(errs, fmt.Errorf("%s: unknown key: %s", k, unknownKeyHint(k)))
		}
	}
	c.pos = pos
	c.path = path
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	var warnings []string
	warn := func(format string, a ...any) { warnings = append(warnings, fmt.Sprintf(format, a...)) }

	// [ledger]
	if c.Ledger.Path == "" {
		p, err := DefaultLedgerPath(env)
		if err != nil {
			add("ledger.path: %v", err)
		}
		c.Ledger.Path = p
	} else if p, err := ExpandPath(c.Ledger.Path, env); err != nil {
		add("ledger.path: %v", err)
	} else {
		c.Ledger.Path = p
	}

	c.leaseTTL = 15 * time.Second
	if c.Ledger.LeaseTTL != nil {
		d, err := time.ParseDuration(*c.Ledger.LeaseTTL)
		switch {
		case err != nil:
			add("ledger.lease_ttl: %q: want a duration such as \"15s\"", *c.Ledger.LeaseTTL)
		case d < time.Second || d > time.Hour:
			add("ledger.lease_ttl: %q: want 1s to 1h", *c.Ledger.LeaseTTL)
		default:
			c.leaseTTL = d
		}
	}

	c.witness, errs = checkWitness(c.Ledger, env, errs)
	checkExport(c.Export, c.witness, add, warn)

	c.startupWait = defaultStartupWait
	if c.StartupWait != nil {
		d, err := time.ParseDuration(*c.StartupWait)
		switch {
		case err != nil:
			add("startup_wait: %q: want a duration such as \"5s\"", *c.StartupWait)
		case d <= 0:
			add("startup_wait: %q: must be positive (the host's initialize must wait for something)", *c.StartupWait)
		case d > 10*time.Minute:
			add("startup_wait: %q: must be at most 10m", *c.StartupWait)
		default:
			c.startupWait = d
		}
	}

	checkAuth(c.Auth, add)

	// [pin]
	switch c.Pin.Mode {
	case "":
		c.Pin.Mode = "tofu"
	case "tofu", "manual":
	default:
		add("pin.mode: %q: want \"tofu\" or \"manual\"", c.Pin.Mode)
	}

	// [limits]
	c.limits, errs = checkLimits(c.Limits, errs)

	// [[server]]
	if len(c.Servers) == 0 {
		add("no [[server]]: mcp-guard needs at least one upstream server")
	}
	names := map[string]int{}
	for i, s := range c.Servers {
		at := fmt.Sprintf("server[%d]", i+1)
		if s.Name != "" {
			at = fmt.Sprintf("server[%d] (%s)", i+1, s.Name)
		}
		switch {
		case s.Name == "":
			add("%s.name: missing: give it a name such as \"fs\"; tools are shown to the host as NAME__tool", at)
		case !serverNameRE.MatchString(s.Name) || strings.Contains(s.Name, "__"):
			add("%s.name: %q: use 1-32 letters, digits, '-' or '_', starting and ending with a letter or digit, without \"__\"", at, s.Name)
		default:
			if j, dup := names[s.Name]; dup {
				add("%s.name: %q is already the name of server[%d]: give each [[server]] its own name", at, s.Name, j)
			}
			names[s.Name] = i + 1
		}
		checkRoots(at, &c.Servers[i], env, add)
		if err := c.Servers[i].AllowSampling.check(); err != nil {
			add("%s.allow_sampling: %v", at, err)
		}
		if err := c.Servers[i].AllowElicitation.check(); err != nil {
			add("%s.allow_elicitation: %v", at, err)
		}
		if s.TrustNewTools && c.Pin.Mode != "tofu" {
			add("%s.trust_new_tools: pin.mode is %q, where every new tool waits for the operator; remove trust_new_tools or set pin.mode = \"tofu\"", at, c.Pin.Mode)
		}
		checkSandbox(at, &c.Servers[i], env, add)
		switch s.Protocol {
		case "", "legacy", "auto", "2026-07-28":
		default:
			add("%s.protocol: %q: use \"legacy\" (the default), \"2026-07-28\" or \"auto\"", at, s.Protocol)
		}
		if s.URL != "" {
			checkRemote(at, &c.Servers[i], env, add, warn)
			checkOAuth(at, &c.Servers[i], add)
			continue
		}
		checkLocalOnly(at, s, add)
		switch {
		case len(s.Command) == 0:
			add("%s.command: missing: give the program and its arguments, e.g. [\"npx\", \"-y\", \"@modelcontextprotocol/server-filesystem\", \"/path\"], or a url", at)
		case s.Command[0] == "":
			add("%s.command: the program name is empty", at)
		}
		for k := range s.Env {
			if !envNameRE.MatchString(k) {
				add("%s.env: %q is not a valid variable name", at, k)
			}
		}
		for _, k := range s.PassEnv {
			if !envNameRE.MatchString(k) {
				add("%s.pass_env: %q is not a valid variable name", at, k)
			}
		}
		checkSecretEnv(at, s, add, warn)
		if s.Cwd != "" {
			p, err := ExpandPath(s.Cwd, env)
			if err != nil {
				add("%s.cwd: %v", at, err)
			}
			c.Servers[i].Cwd = p
		}
	}

	// [[rule]]
	rules := make([]classify.Rule, 0, len(c.Rules))
	for i, r := range c.Rules {
		at := fmt.Sprintf("rule[%d]", i+1)
		required := map[string]string{"server": r.Server, "action": r.Action}
		if r.Prompt == "" && r.Resource == "" {
			required["tool"], required["class"] = r.Tool, r.Class // a tool rule
		}
		for _, field := range []string{"server", "tool", "class", "action"} {
			if v, ok := required[field]; ok && v == "" {
				add("%s.%s: missing: %s", at, field, missingRuleField[field])
			}
		}
		if r.Server != "" && !strings.ContainsAny(r.Server, "*?[") {
			if _, ok := names[r.Server]; !ok {
				add("%s.server: %q is not the name of any [[server]] (they are: %s)", at, r.Server, serverNames(c.Servers))
			}
		}
		cr := classify.Rule{Server: r.Server, Tool: r.Tool, Prompt: r.Prompt, Resource: r.Resource, Reason: r.Reason, Labels: r.Labels}
		if r.Class != "" {
			cl, err := classify.ParseClass(r.Class)
			if err != nil {
				add("%s.class: %v", at, err)
			}
			cr.Class = cl
		}
		if r.Action != "" {
			ac, err := classify.ParseAction(r.Action)
			if err != nil {
				add("%s.action: %v", at, err)
			}
			cr.Action = ac
		}
		for _, l := range r.Labels {
			if !classify.ValidLabel(l) {
				add("%s.labels: %q: a label is 1-32 lowercase letters, digits, '_' or '-', starting with a letter", at, l)
			}
		}
		if len(r.When) > 0 {
			cr.When = map[string]classify.Predicate{}
			for ptr, pred := range r.When {
				p, err := parsePredicate(pred)
				if err != nil {
					add("%s.when.%q: %v", at, ptr, err)
					continue
				}
				cr.When[ptr] = p
			}
		}
		rules = append(rules, cr)
	}
	if len(c.Rules) == 0 {
		add("no [[rule]]: without rules no tool is exposed; add rules that allow, ask or deny")
	}
	c.askIn = checkAskIn(c.Approvals, c.Rules, add)
	if serving && only == "" { // a server served alone (--server) keeps its names
		errs = append(errs, c.namespaceErrors()...)
	}
	flows, ferrs := c.compileFlows()
	errs = append(errs, ferrs...)
	compiled, err := classify.Compile(rules)
	if err != nil {
		// Compile checks the rules again: keep only what it adds.
		seen := map[string]bool{}
		for _, e := range errs {
			seen[strings.Join(messageKey(e.Error()), keySep)] = true
		}
		for _, e := range splitJoined(err) {
			if !seen[strings.Join(messageKey(e.Error()), keySep)] {
				errs = append(errs, e)
			}
		}
	}
	if len(errs) > 0 {
		return nil, newError(path, pos, errs)
	}
	c.rules, c.flows = compiled, flows
	warnings = append(warnings, flowWarnings(c.Rules, flows)...)
	var servers []string
	for _, s := range c.Servers {
		servers = append(servers, s.Name)
	}
	c.warnings = append(warnings, compiled.Lint(servers)...)
	for _, l := range compiled.PathLiterals() {
		if real, err := fspath.Resolve(l.Literal); err == nil && real != l.Literal {
			c.warnings = append(c.warnings, fmt.Sprintf("rule[%d]: path pattern %q goes through a symbolic link (%s is %s); calls to stdio servers are also decided on the path the link leads to, which this pattern does not match: write it with %s",
				l.Rule, l.Pattern, l.Literal, real, real))
		}
	}
	return &c, nil
}

// serverNames lists the servers' names for a message.
func serverNames(servers []ServerConfig) string {
	var names []string
	for _, s := range servers {
		if q := strconv.Quote(s.Name); s.Name != "" && !slices.Contains(names, q) {
			names = append(names, q)
		}
	}
	if names == nil {
		return "none has a name"
	}
	return strings.Join(names, ", ")
}

// missingRuleField says what to write for a [[rule]] key left out.
var missingRuleField = map[string]string{
	"server": `name the [[server]] it is for (or "*" for every one)`,
	"tool":   `name the tool (a glob such as "read_*"), or write prompt or resource instead`,
	"class":  `say what the tool does: read, write, destructive, network or exec`,
	"action": `say what happens: allow, ask or deny`,
}

// splitJoined turns an errors.Join result back into its parts.
func splitJoined(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}
