package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"github.com/mcp-guard/mcp-guard/classify"
	"github.com/mcp-guard/mcp-guard/gate"
	"github.com/mcp-guard/mcp-guard/internal/fspath"
	"github.com/mcp-guard/mcp-guard/proxy"
)

// Config is the operator's TOML file, decoded strictly.
type Config struct {
	// StartupWait is how long the host's initialize waits for upstreams
	// to start and list; those not ready by then join later.
	StartupWait *string        `toml:"startup_wait"`
	Ledger      LedgerConfig   `toml:"ledger"`
	Pin         PinConfig      `toml:"pin"`
	Limits      LimitsConfig   `toml:"limits"`
	Servers     []ServerConfig `toml:"server"`
	Rules       []RuleConfig   `toml:"rule"`

	// Filled in by loadConfig.
	path        string
	limits      Limits
	leaseTTL    time.Duration
	startupWait time.Duration
	rules       *classify.Rules
	warnings    []string
}

// LedgerConfig is the [ledger] table.
type LedgerConfig struct {
	Path     string  `toml:"path"`
	LeaseTTL *string `toml:"lease_ttl"`
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
}

// Limits are the limits in force, defaults filled in.
type Limits struct {
	CallsPerSession       int64
	CallsPerToolPerMinute int64
	IdenticalCallRepeats  int64
	ConsecutiveDenials    int64
	PendingApprovals      int64
	ResultBytes           int64
	MessageBytes          int64
	CallTimeout           time.Duration
	ApprovalWait          time.Duration
	GrantTTL              time.Duration
	StartTimeout          time.Duration
}

// defaultStartupWait is how long the host's initialize waits for upstreams
// when the config does not say.
const defaultStartupWait = 5 * time.Second

// defaultLimits are the limits of a config that sets none.
func defaultLimits() Limits {
	return Limits{
		CallsPerSession:       1000,
		CallsPerToolPerMinute: 60,
		IdenticalCallRepeats:  5,
		ConsecutiveDenials:    10,
		PendingApprovals:      8,
		ResultBytes:           1 << 20,
		MessageBytes:          4 << 20,
		CallTimeout:           120 * time.Second,
		ApprovalWait:          50 * time.Second,
		GrantTTL:              10 * time.Minute,
		StartTimeout:          60 * time.Second,
	}
}

// ServerConfig is one [[server]].
type ServerConfig struct {
	Name    string            `toml:"name"`
	Command []string          `toml:"command"`
	Env     map[string]string `toml:"env"`
	PassEnv []string          `toml:"pass_env"`
	Cwd     string            `toml:"cwd"`
	URL     string            `toml:"url"`

	// For url servers: the credential, sent as "Authorization: Bearer", and
	// other headers. Values are never printed, logged or recorded.
	TokenEnv  string            `toml:"token_env"`
	TokenFile string            `toml:"token_file"`
	Headers   map[string]string `toml:"headers"`

	// What the server may ask of the host; nothing unless set. Roots are
	// the only roots it is told of (file URIs or paths), never the host's.
	AllowSampling    clientAccess `toml:"allow_sampling"`
	AllowElicitation clientAccess `toml:"allow_elicitation"`
	Roots            []string     `toml:"roots"`

	// TrustNewTools pins and exposes at once what the server adds after its
	// first listing (pin mode tofu); by default it waits for pin accept.
	TrustNewTools bool `toml:"trust_new_tools"`
}

// clientAccess is allow_sampling or allow_elicitation: true (or "allow"),
// false (or "deny", the default) or "ask". The decoder keeps the value as
// written; parseConfig checks it, located, and fills in Access.
type clientAccess struct {
	raw    any
	Access proxy.Access
}

func (a *clientAccess) UnmarshalTOML(v any) error {
	a.raw = v
	return nil
}

// check resolves the value as written, or says why it cannot be used.
func (a *clientAccess) check() error {
	switch a.raw {
	case nil, false, "deny":
		a.Access = proxy.AccessDeny
	case true, "allow":
		a.Access = proxy.AccessAllow
	case "ask":
		a.Access = proxy.AccessAsk
	default:
		if s, ok := a.raw.(string); ok {
			return fmt.Errorf("%q: want true, false, \"allow\", \"ask\" or \"deny\"", s)
		}
		return fmt.Errorf("want true, false, \"allow\", \"ask\" or \"deny\", got %s", tomlType(a.raw))
	}
	return nil
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
}

// configError is a config that cannot be used; the CLI exits 2 for it.
type configError struct {
	path string
	errs []error
}

func (e *configError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: invalid config", e.path)
	for _, err := range e.errs {
		fmt.Fprintf(&b, "\n  %v", err)
	}
	return b.String()
}

var serverNameRE = regexp.MustCompile(`^[a-zA-Z0-9]([a-zA-Z0-9_-]{0,30}[a-zA-Z0-9])?$`)

var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// loadConfig reads and checks the config at path; every problem found is
// reported, located, in one *configError.
func loadConfig(path string, env envFunc) (*Config, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, &configError{path: path, errs: []error{err}}
	}
	return parseConfig(path, string(src), env)
}

// maxConfigBytes and maxConfigNesting bound what the TOML decoder is given:
// its cost grows faster than linearly with nesting.
const (
	maxConfigBytes   = 1 << 20
	maxConfigNesting = 32
)

func parseConfig(path, src string, env envFunc) (*Config, error) {
	fail := func(errs ...error) (*Config, error) { return nil, &configError{path: path, errs: errs} }
	if len(src) > maxConfigBytes {
		return fail(fmt.Errorf("the file is %d bytes; a config may be at most %d", len(src), maxConfigBytes))
	}
	if line, ok := nestingWithin(src, maxConfigNesting); !ok {
		return fail(fmt.Errorf("line %d: arrays and inline tables nest more than %d levels", line, maxConfigNesting))
	}
	var c Config
	md, err := toml.Decode(src, &c)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return fail(fmt.Errorf("line %d, column %d: %s", pe.Position.Line, pe.Position.Col, pe.Message))
		}
		return fail(err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		var generic map[string]any
		_, _ = toml.Decode(src, &generic)
		var errs []error
		keys := locateKeys(generic, und)
		for i, k := range keys {
			if i == 20 {
				errs = append(errs, fmt.Errorf("... and %d more unknown keys", len(keys)-20))
				break
			}
			errs = append(errs, fmt.Errorf("%s: unknown key", k))
		}
		return fail(errs...)
	}
	c.path = path
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	var warnings []string
	warn := func(format string, a ...any) { warnings = append(warnings, fmt.Sprintf(format, a...)) }

	// [ledger]
	if c.Ledger.Path == "" {
		p, err := defaultLedgerPath(env)
		if err != nil {
			add("ledger.path: %v", err)
		}
		c.Ledger.Path = p
	} else if p, err := expandPath(c.Ledger.Path, env); err != nil {
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
			add("%s.name: missing", at)
		case !serverNameRE.MatchString(s.Name) || strings.Contains(s.Name, "__"):
			add("%s.name: %q: use 1-32 letters, digits, '-' or '_', starting and ending with a letter or digit, without \"__\"", at, s.Name)
		default:
			if j, dup := names[s.Name]; dup {
				add("%s.name: %q is already the name of server[%d]", at, s.Name, j)
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
		if s.URL != "" {
			checkRemote(at, &c.Servers[i], env, add, warn)
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
		if s.Cwd != "" {
			p, err := expandPath(s.Cwd, env)
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
		for field, v := range required {
			if v == "" {
				add("%s.%s: missing", at, field)
			}
		}
		if r.Server != "" && !strings.ContainsAny(r.Server, "*?[") {
			if _, ok := names[r.Server]; !ok {
				add("%s.server: %q is not the name of any [[server]]", at, r.Server)
			}
		}
		cr := classify.Rule{Server: r.Server, Tool: r.Tool, Prompt: r.Prompt, Resource: r.Resource, Reason: r.Reason}
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
	if len(errs) > 0 {
		return fail(errs...)
	}
	compiled, err := classify.Compile(rules)
	if err != nil {
		return fail(splitJoined(err)...)
	}
	c.rules = compiled
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

// splitJoined turns an errors.Join result back into its parts.
func splitJoined(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

var predicateKeys = []string{"equals", "one_of", "prefix", "glob", "regex", "path", "max_length", "absent"}

func parsePredicate(m map[string]any) (classify.Predicate, error) {
	var p classify.Predicate
	if len(m) != 1 {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return p, fmt.Errorf("give exactly one of %s (got %d: %s)", strings.Join(predicateKeys, ", "), len(m), strings.Join(keys, ", "))
	}
	for k, v := range m {
		str := func() (*string, error) {
			s, ok := v.(string)
			if !ok {
				return nil, fmt.Errorf("%s: want a string, got %s", k, tomlType(v))
			}
			return &s, nil
		}
		var err error
		switch k {
		case "equals":
			if !isScalar(v) {
				return p, fmt.Errorf("equals: want a string, number or boolean, got %s", tomlType(v))
			}
			p.Equals = v
		case "one_of":
			arr, ok := v.([]any)
			if !ok || len(arr) == 0 {
				return p, fmt.Errorf("one_of: want a non-empty array, got %s", tomlType(v))
			}
			for i, e := range arr {
				if !isScalar(e) {
					return p, fmt.Errorf("one_of[%d]: want a string, number or boolean, got %s", i, tomlType(e))
				}
			}
			p.OneOf = arr
		case "prefix":
			p.Prefix, err = str()
		case "glob":
			p.Glob, err = str()
		case "regex":
			p.Regex, err = str()
		case "path":
			p.Path, err = str()
		case "max_length":
			n, ok := v.(int64)
			if !ok || n < 0 {
				return p, fmt.Errorf("max_length: want a non-negative integer, got %s", tomlType(v))
			}
			p.MaxLength = &n
		case "absent":
			b, ok := v.(bool)
			if !ok {
				return p, fmt.Errorf("absent: want true or false, got %s", tomlType(v))
			}
			p.Absent = &b
		default:
			return p, fmt.Errorf("%q: unknown predicate; want one of %s", k, strings.Join(predicateKeys, ", "))
		}
		if err != nil {
			return p, err
		}
	}
	return p, nil
}

func isScalar(v any) bool {
	switch v.(type) {
	case string, int64, float64, bool:
		return true
	}
	return false
}

func tomlType(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case int64:
		return "an integer"
	case float64:
		return "a float"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "a table"
	case time.Time:
		return "a datetime"
	}
	return fmt.Sprintf("%T", v)
}

func checkLimits(l LimitsConfig, errs []error) (Limits, []error) {
	out := defaultLimits()
	num := func(name string, v *int64, dst *int64, max int64) {
		if v == nil {
			return
		}
		if *v <= 0 {
			errs = append(errs, fmt.Errorf("limits.%s: %d: must be at least 1 (0 does not mean unlimited; leave it out for the default %d)", name, *v, *dst))
			return
		}
		if *v > max {
			errs = append(errs, fmt.Errorf("limits.%s: %d: must be at most %d", name, *v, max))
			return
		}
		*dst = *v
	}
	dur := func(name string, v *string, dst *time.Duration, max time.Duration) {
		if v == nil {
			return
		}
		d, err := time.ParseDuration(*v)
		if err != nil {
			errs = append(errs, fmt.Errorf("limits.%s: %q: want a duration such as \"90s\" or \"5m\"", name, *v))
			return
		}
		if d <= 0 {
			errs = append(errs, fmt.Errorf("limits.%s: %q: must be positive", name, *v))
			return
		}
		if d > max {
			errs = append(errs, fmt.Errorf("limits.%s: %q: must be at most %s", name, *v, max))
			return
		}
		*dst = d
	}
	num("calls_per_session", l.CallsPerSession, &out.CallsPerSession, 1<<40)
	num("calls_per_tool_per_minute", l.CallsPerToolPerMinute, &out.CallsPerToolPerMinute, 1<<30)
	num("identical_call_repeats", l.IdenticalCallRepeats, &out.IdenticalCallRepeats, 1<<30)
	num("consecutive_denials", l.ConsecutiveDenials, &out.ConsecutiveDenials, 1<<30)
	num("pending_approvals", l.PendingApprovals, &out.PendingApprovals, 1024)
	num("result_bytes", l.ResultBytes, &out.ResultBytes, 1<<30)
	num("message_bytes", l.MessageBytes, &out.MessageBytes, 1<<30)
	dur("call_timeout", l.CallTimeout, &out.CallTimeout, 24*time.Hour)
	dur("approval_wait", l.ApprovalWait, &out.ApprovalWait, 24*time.Hour)
	dur("grant_ttl", l.GrantTTL, &out.GrantTTL, 30*24*time.Hour)
	dur("start_timeout", l.StartTimeout, &out.StartTimeout, time.Hour)
	if out.MessageBytes < 64<<10 {
		errs = append(errs, fmt.Errorf("limits.message_bytes: %d: must be at least 65536", out.MessageBytes))
	}
	return out, errs
}

// locateKeys turns undecoded keys (which carry no array index) into located
// names such as rule[3].acton, by finding which array elements hold them.
func locateKeys(generic map[string]any, keys []toml.Key) []string {
	seen := map[string]bool{}
	var out []string
	distinct := map[string]bool{}
	for _, k := range keys {
		if distinct[k.String()] { // one walk per distinct key, not per occurrence
			continue
		}
		distinct[k.String()] = true
		for _, loc := range locate(generic, k, "") {
			if !seen[loc] {
				seen[loc] = true
				out = append(out, loc)
			}
		}
	}
	sort.Strings(out)
	// Drop children of a reported unknown table: "logging" covers "logging.level".
	var pruned []string
	for _, k := range out {
		covered := false
		for _, p := range pruned {
			if strings.HasPrefix(k, p+".") {
				covered = true
			}
		}
		if !covered {
			pruned = append(pruned, k)
		}
	}
	return pruned
}

func locate(v any, key toml.Key, prefix string) []string {
	if len(key) == 0 {
		return []string{prefix}
	}
	join := func(p, k string) string {
		if p == "" {
			return k
		}
		return p + "." + k
	}
	switch t := v.(type) {
	case map[string]any:
		child, ok := t[key[0]]
		if !ok {
			return nil
		}
		return locate(child, key[1:], join(prefix, key[0]))
	case []map[string]any:
		var out []string
		for i, e := range t {
			out = append(out, locate(e, key, fmt.Sprintf("%s[%d]", prefix, i+1))...)
		}
		return out
	case []any:
		var out []string
		for i, e := range t {
			out = append(out, locate(e, key, fmt.Sprintf("%s[%d]", prefix, i+1))...)
		}
		return out
	}
	return []string{join(prefix, strings.Join(key, "."))}
}

// envFunc looks up an environment variable (os.LookupEnv in main, a map in tests).
type envFunc func(string) (string, bool)

// expandPath expands a leading ~ and $XDG_*/$HOME variables in a path and
// makes it absolute.
func expandPath(p string, env envFunc) (string, error) {
	var bad error
	p = os.Expand(p, func(name string) string {
		if name == "HOME" || strings.HasPrefix(name, "XDG_") {
			v, err := xdgDir(name, env)
			if err != nil {
				bad = err
			}
			return v
		}
		bad = fmt.Errorf("$%s: only $HOME and $XDG_* are expanded in paths", name)
		return ""
	})
	if bad != nil {
		return "", bad
	}
	if p == "~" || strings.HasPrefix(p, "~/") {
		home, err := xdgDir("HOME", env)
		if err != nil {
			return "", err
		}
		p = home + p[1:]
	}
	if !filepath.IsAbs(p) {
		return "", fmt.Errorf("%q: use an absolute path (or start it with ~/)", p)
	}
	return filepath.Clean(p), nil
}

// xdgDir resolves HOME and the XDG base directories with their defaults.
func xdgDir(name string, env envFunc) (string, error) {
	if v, ok := env(name); ok && v != "" {
		return v, nil
	}
	home, ok := env("HOME")
	if !ok || home == "" {
		return "", fmt.Errorf("$%s is not set and neither is $HOME", name)
	}
	switch name {
	case "HOME":
		return home, nil
	case "XDG_CONFIG_HOME":
		return filepath.Join(home, ".config"), nil
	case "XDG_STATE_HOME":
		return filepath.Join(home, ".local", "state"), nil
	case "XDG_DATA_HOME":
		return filepath.Join(home, ".local", "share"), nil
	case "XDG_CACHE_HOME":
		return filepath.Join(home, ".cache"), nil
	}
	return "", fmt.Errorf("$%s is not set", name)
}

func defaultLedgerPath(env envFunc) (string, error) {
	dir, err := xdgDir("XDG_STATE_HOME", env)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "mcp-guard", "ledger.db"), nil
}

// configPath finds the config: --config, else $MCP_GUARD_CONFIG, else
// $XDG_CONFIG_HOME/mcp-guard/config.toml.
func configPath(flagValue string, env envFunc) (string, error) {
	if flagValue != "" {
		return flagValue, nil
	}
	if v, ok := env("MCP_GUARD_CONFIG"); ok && v != "" {
		return v, nil
	}
	dir, err := xdgDir("XDG_CONFIG_HOME", env)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "mcp-guard", "config.toml"), nil
}

// childEnv is exactly the server's env plus the pass_env names that are set
// in mcp-guard's own environment; nothing else reaches the child.
func childEnv(s ServerConfig, env envFunc) []string {
	out := []string{}
	set := map[string]bool{}
	for _, k := range s.PassEnv {
		if _, fixed := s.Env[k]; fixed {
			continue // env wins over pass_env
		}
		if v, ok := env(k); ok && !set[k] {
			out = append(out, k+"="+v)
			set[k] = true
		}
	}
	keys := make([]string, 0, len(s.Env))
	for k := range s.Env {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, k+"="+s.Env[k])
	}
	return out
}

// nestingWithin reports whether no array or inline table in src nests deeper
// than max, and otherwise the line where it does. Brackets inside quoted
// strings and comments do not count; table headers ([a], [[a]]) open and
// close on one line and stay shallow.
func nestingWithin(src string, max int) (int, bool) {
	depth, line := 0, 1
	for i := 0; i < len(src); i++ {
		switch ch := src[i]; ch {
		case '\n':
			line++
		case '#':
			for i < len(src) && src[i] != '\n' {
				i++
			}
			i--
		case '"', '\'':
			triple := strings.HasPrefix(src[i:], strings.Repeat(string(ch), 3))
			if triple {
				i += 3
				end := strings.Index(src[i:], strings.Repeat(string(ch), 3))
				if end < 0 {
					return line, true // the decoder reports the unterminated string
				}
				line += strings.Count(src[i:i+end], "\n")
				i += end + 2
				continue
			}
			for i++; i < len(src) && src[i] != ch && src[i] != '\n'; i++ {
				if ch == '"' && src[i] == '\\' {
					i++
				}
			}
		case '[', '{':
			depth++
			if depth > max {
				return line, false
			}
		case ']', '}':
			if depth > 0 {
				depth--
			}
		}
	}
	return 0, true
}

// newGate is the gate over the config's rules. Path rules on stdio servers,
// which open paths on this machine, also decide the path with its symbolic
// links followed (gate.LocalServers).
func (c *Config) newGate() *gate.Gate {
	var local []string
	for _, s := range c.Servers {
		if s.URL == "" {
			local = append(local, s.Name)
		}
	}
	return gate.New(c.rules, gate.LocalServers(local...))
}
