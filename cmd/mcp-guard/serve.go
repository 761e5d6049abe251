package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/mcp-guard/mcp-guard/config"
	"github.com/mcp-guard/mcp-guard/export"
	"github.com/mcp-guard/mcp-guard/ledger"
	"github.com/mcp-guard/mcp-guard/oauth"
	"github.com/mcp-guard/mcp-guard/proxy"
	"github.com/mcp-guard/mcp-guard/upstream"
)

// cmdServe runs the proxy for one host on stdin/stdout. Everything mcp-guard
// itself has to say goes to stderr; stdout carries MCP messages only.
func cmdServe(args []string, c cli) error {
	var hf httpFlags
	var scopeName string
	cfg, err := serveFlags(args, c, &hf, &scopeName)
	if err != nil {
		return err
	}
	// The endpoint is bound before the ledger opens or any upstream starts:
	// a bad address or a missing token stops serve with nothing started.
	var ln net.Listener
	var httpOpts proxy.HTTPOptions
	if hf.addr != "" {
		if ln, httpOpts, err = hf.listen(); err != nil {
			return err
		}
		defer ln.Close()
	}
	stopProfile, err := startProfile(c.env)
	if err != nil {
		return err
	}
	defer stopProfile()
	level := slog.LevelInfo
	logVar, _ := c.env("MCP_GUARD_LOG")
	if strings.EqualFold(logVar, "debug") {
		level = slog.LevelDebug // every allowed request too, not only refusals and asks
	}
	log := operatorLog(c.stderr, level)
	if logVar != "" && !strings.EqualFold(logVar, "debug") && !strings.EqualFold(logVar, "info") {
		log.Warn("MCP_GUARD_LOG is not debug or info: logging refusals, asks and problems only", "MCP_GUARD_LOG", logVar)
	}
	for _, w := range cfg.Warnings() {
		log.Warn("config: " + w)
	}
	ctx, stop := signal.NotifyContext(c.ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	led, err := ledger.Open(ctx, cfg.Ledger.Path, ledger.Options{LeaseTTL: cfg.LeaseTTL()})
	if err != nil {
		return err
	}
	defer led.Close()
	ex, stopExport, err := startExport(ctx, cfg, c.env, led, log)
	if err != nil {
		return err
	}
	defer stopExport()
	wit, err := startWitness(ctx, cfg, led, log, ex)
	if err != nil {
		return err
	}
	defer wit.Close()
	if err := recoverInterrupted(ctx, led, log); err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	go func() { // another serve process may die while this one runs
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(cfg.LeaseTTL()):
				if err := recoverInterrupted(ctx, led, log); err != nil && ctx.Err() == nil {
					log.Error("marking interrupted calls", "err", err)
				}
				if scopes, err := led.ExpireScopes(ctx, scopeGrace(cfg)); err != nil && ctx.Err() == nil {
					log.Error("ending the labels of scopes with no live process", "err", err)
				} else if len(scopes) > 0 {
					log.Info("labels ended: no process of the scope was alive for the grace period", "scopes", strings.Join(scopes, ","))
				}
			}
		}
	}()
	hostKind := "stdio"
	if hf.addr != "" {
		hostKind = "http " + hf.addr
	}
	sess, err := led.StartSession(ctx, ledger.SessionInfo{Kind: "serve", Host: hostKind, PID: os.Getpid()})
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	scope := scopeName
	if scope == "" {
		scope = "session:" + sess.ID()
	}
	if ended, err := led.JoinScope(ctx, sess.ID(), scope, scopeGrace(cfg)); err != nil {
		sess.End(context.WithoutCancel(ctx))
		return fmt.Errorf("serve: %w", err)
	} else if len(ended) > 0 {
		log.Info("labels ended: no process of the scope was alive for the grace period", "scope", scope, "labels", strings.Join(ended, ","))
	}
	witCtx, stopWit := context.WithCancel(ctx)
	defer func() {
		// The session's end is committed first, then the last head.
		sess.End(context.WithoutCancel(ctx))
		stopWit()
		_ = wit.Stop(ctx)
	}()
	_ = wit.Commit(ctx, ledger.WhyStart) // a failure is logged by the committer
	go wit.Run(witCtx)

	opts := proxyOptions(cfg, c, log)
	opts.Ledger, opts.Lease = led, sess
	checkSignIns(opts, led)
	if ex != nil {
		opts.Ledger = export.Wrap(led, ex) // what is recorded is unchanged; it is also exported
	}
	opts.Scope, opts.SharedScope, opts.ScopeGrace = scope, scopeName != "", scopeGrace(cfg)
	opts.Witness, opts.WitnessRequired = witnessFunc(wit), cfg.WitnessInForce().Required
	notifier := startNotify(cfg, c.env, log)
	defer notifier.Close()
	opts.Waiting = waitingFunc(notifier)
	opts.AskIn = cfg.AskIn
	p, err := proxy.New(ctx, opts)
	if err != nil {
		return err
	}
	defer p.Close()
	if ln != nil {
		hf.announce(c, ln, httpOpts)
		httpOpts.MaxBody = cfg.LimitsInForce().MessageBytes
		if err := p.ServeHTTP(ctx, ln, httpOpts); err != nil {
			return fmt.Errorf("serve: %w", err)
		}
		return nil
	}
	in, restore := pollable(c.stdin)
	defer restore()
	if err := p.ServeStdio(ctx, in, c.stdout); err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}

// serveFlags parses serve's flags: --config; --server NAME to run that
// [[server]] alone (the others are not started; rules for them go unused);
// --http ADDR, --token-file F and --allow-host H for the HTTP endpoint.
func serveFlags(args []string, c cli, hf *httpFlags, scope *string) (*config.Config, error) {
	flags := newFlagSet("serve")
	flags.StringVar(scope, "scope", "", "the host's label scope, shared by every serve started for it (wrap sets the host's name); default: this connection (each HTTP session its own)")
	path := flags.String("config", "", "config file")
	only := flags.String("server", "", "run only this [[server]]")
	flags.StringVar(&hf.addr, "http", "", "serve streamable HTTP on this address instead of stdio")
	flags.StringVar(&hf.tokenFile, "token-file", "", "with --http: require this bearer token")
	flags.Var(&hf.hosts, "allow-host", "with --http: a Host name to accept besides localhost (repeatable)")
	flags.DurationVar(&hf.idleTTL, "idle-ttl", 30*time.Minute, "with --http: end a host session idle this long")
	if err := parseFlags(flags, args, c); err != nil {
		return nil, err
	}
	if flags.NArg() > 0 {
		return nil, usageErr("serve: unexpected argument %q", flags.Arg(0))
	}
	if hf.addr == "" {
		for _, name := range []string{"token-file", "allow-host", "idle-ttl"} {
			if flagGiven(flags, name) {
				return nil, usageErr("serve: --%s is for the HTTP endpoint: give --http ADDR too (without it serve speaks stdio)", name)
			}
		}
	}
	if *scope != "" && !validScope(*scope) {
		return nil, usageErr("serve: --scope %q: use 1-64 letters, digits, '.', '_' or '-'", *scope)
	}
	p, err := configPath(*path, c.env)
	if err != nil {
		return nil, usageErr("serve: %v", err)
	}
	cfg, err := config.LoadServing(p, c.env, *only) // as check reports it: every problem, located
	if err != nil {
		return nil, err
	}
	if err := onlyServer("serve", cfg, *only); err != nil {
		return nil, err
	}
	return cfg, nil
}

// flagGiven reports whether the flag name was set on the command line.
func flagGiven(fs *flag.FlagSet, name string) bool {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// onlyServer keeps the [[server]] named only alone, when only is set
// (--server).
func onlyServer(cmd string, cfg *config.Config, only string) error {
	if only == "" {
		return nil
	}
	if names, ok := cfg.Only(only); !ok {
		return usageErr("%s: --server %q: %s has no [[server]] of that name; its servers: %s", cmd, only, cfg.Path(), strings.Join(names, ", "))
	}
	return nil
}

// recoverInterrupted marks calls left "started" by a serve process whose
// lease lapsed (it was killed or crashed) as interrupted (L7).
func recoverInterrupted(ctx context.Context, led *ledger.Ledger, log *slog.Logger) error {
	ids, err := led.RecoverInterrupted(ctx)
	if err != nil {
		return err
	}
	if len(ids) > 0 {
		log.Warn("calls left unfinished by a process that stopped were marked interrupted", "calls", fmt.Sprint(ids))
	}
	return nil
}

// checkSignIns has each url server's sign-in checked against the issuer
// pinned in led before its token is used.
func checkSignIns(opts proxy.Options, led *ledger.Ledger) {
	for _, u := range opts.Upstreams {
		if src, ok := u.Auth.(*oauth.Source); ok {
			src.Check = checkIssuer(led, u.Name)
		}
	}
}

func proxyOptions(cfg *config.Config, c cli, log *slog.Logger) proxy.Options {
	env := c.env
	signIns := newSignInSecrets(cfg, env, log)
	g := newGate(cfg)
	var ups []upstream.Spec
	l := cfg.LimitsInForce()
	for _, s := range cfg.Servers {
		spec := upstream.Spec{Name: s.Name, Command: s.Command, Env: s.ChildEnv(env), Dir: s.Cwd, Sandbox: serverSandbox(s, c)}
		if s.URL != "" {
			spec = upstream.Spec{Name: s.Name, URL: s.URL, Header: s.UpstreamHeader(env)}
			if s.OAuth != nil {
				spec.Auth = &oauth.Source{Store: authStore(cfg, env), Server: s.Name, Resource: s.URL, Client: oauthHTTPClient(), Taken: signIns.add}
			}
		}
		spec.Capabilities = g.ClientAccess(s.Name).Capabilities()
		spec.TrustNewTools = s.TrustNewTools
		spec.Protocol = s.Protocol
		ups = append(ups, spec)
	}
	return proxy.Options{
		Upstreams: ups,
		// namespace = false, honoured for a server served alone (CheckNamespace)
		BareNames:   len(cfg.Servers) == 1 && !cfg.Servers[0].Namespaced(),
		Gate:        g,
		PinTOFU:     cfg.Pin.Mode == "tofu",
		Limits:      l,
		StartupWait: cfg.StartupWaitInForce(),
		LogDir:      filepath.Join(filepath.Dir(cfg.Ledger.Path), "logs"),
		Version:     version,
		Log:         log,
		Secrets:     signIns.r,
	}
}

// scopeGrace is how long a label scope's labels outlive its last live
// process (the host restarting): twice the ledger lease.
func scopeGrace(cfg *config.Config) time.Duration { return 2 * cfg.LeaseTTL() }

// validScope reports whether s can name a label scope (serve --scope).
func validScope(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}
