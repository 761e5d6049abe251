package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/mcp-guard/mcp-guard/config"
	"github.com/mcp-guard/mcp-guard/gate"
	"github.com/mcp-guard/mcp-guard/internal/otlp"
	"github.com/mcp-guard/mcp-guard/ledger"
	"github.com/mcp-guard/mcp-guard/proxy"
)

// cmdServe runs the proxy for one host on stdin/stdout. Everything mcp-guard
// itself has to say goes to stderr; stdout carries MCP messages only.
func cmdServe(args []string, c cli) error {
	var hf httpFlags
	cfg, err := serveFlags(args, c, &hf)
	if err != nil {
		return err
	}
	stopProfile, err := startProfile(c.env)
	if err != nil {
		return err
	}
	defer stopProfile()
	log := operatorLog(c.stderr, slog.LevelInfo)
	for _, w := range cfg.Warnings() {
		log.Warn("config: " + w)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
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
	witCtx, stopWit := context.WithCancel(ctx)
	defer func() {
		// The session's end is committed first, then the last head.
		sess.End(context.WithoutCancel(ctx))
		stopWit()
		_ = wit.Stop(ctx)
	}()
	_ = wit.Commit(ctx, ledger.WhyStart) // a failure is logged by the committer
	go wit.Run(witCtx)

	opts := proxyOptions(cfg, c.env, log)
	opts.Ledger, opts.Lease = led, sess
	if ex != nil {
		opts.Ledger = otlp.Wrap(led, ex) // what is recorded is unchanged; it is also exported
	}
	opts.Witness, opts.WitnessRequired = witnessFunc(wit), cfg.WitnessInForce().Required
	notifier := startNotify(cfg, c.env, log)
	defer notifier.Close()
	opts.Waiting = waitingFunc(notifier)
	p, err := proxy.New(ctx, opts)
	if err != nil {
		return err
	}
	defer p.Close()
	if hf.addr != "" {
		ln, o, err := hf.listen(c)
		if err != nil {
			return err
		}
		o.MaxBody = cfg.LimitsInForce().MessageBytes
		if err := p.ServeHTTP(ctx, ln, o); err != nil {
			return fmt.Errorf("serve: %w", err)
		}
		return nil
	}
	if err := p.ServeStdio(ctx, c.stdin, c.stdout); err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}

// serveFlags parses serve's flags: --config; --server NAME to run that
// [[server]] alone (the others are not started; rules for them go unused);
// --http ADDR, --token-file F and --allow-host H for the HTTP endpoint.
func serveFlags(args []string, c cli, hf *httpFlags) (*config.Config, error) {
	flags := newFlagSet("serve")
	path := flags.String("config", "", "config file")
	only := flags.String("server", "", "run only this [[server]]")
	flags.StringVar(&hf.addr, "http", "", "serve streamable HTTP on this address instead of stdio")
	flags.StringVar(&hf.tokenFile, "token-file", "", "with --http: require this bearer token")
	flags.Var(&hf.hosts, "allow-host", "with --http: a Host name to accept besides localhost (repeatable)")
	flags.DurationVar(&hf.idleTTL, "idle-ttl", 30*time.Minute, "with --http: end a host session idle this long")
	if err := flags.Parse(args); err != nil {
		return nil, usageErr("serve: %v", err)
	}
	if flags.NArg() > 0 {
		return nil, usageErr("serve: unexpected argument %q", flags.Arg(0))
	}
	p, err := configPath(*path, c.env)
	if err != nil {
		return nil, usageErr("serve: %v", err)
	}
	cfg, err := config.Load(p, c.env)
	if err != nil {
		return nil, err
	}
	if err := onlyServer("serve", cfg, *only); err != nil {
		return nil, err
	}
	return cfg, cfg.CheckNamespace()
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

func proxyOptions(cfg *config.Config, env envFunc, log *slog.Logger) proxy.Options {
	var ups []proxy.UpstreamSpec
	l := cfg.LimitsInForce()
	for _, s := range cfg.Servers {
		spec := proxy.UpstreamSpec{Name: s.Name, Command: s.Command, Env: s.ChildEnv(env), Dir: s.Cwd, Sandbox: serverSandbox(s, env)}
		if s.URL != "" {
			spec = proxy.UpstreamSpec{Name: s.Name, URL: s.URL, Header: s.UpstreamHeader(env)}
		}
		spec.Access = proxy.ClientAccess{Sampling: proxyAccess(s.AllowSampling.Access), Elicitation: proxyAccess(s.AllowElicitation.Access), Roots: s.Roots}
		spec.TrustNewTools = s.TrustNewTools
		ups = append(ups, spec)
	}
	return proxy.Options{
		Upstreams: ups,
		// namespace = false, honoured for a server served alone (CheckNamespace)
		BareNames: len(cfg.Servers) == 1 && !cfg.Servers[0].Namespaced(),
		Gate:      newGate(cfg),
		PinTOFU:   cfg.Pin.Mode == "tofu",
		Limits: proxy.Limits{
			MessageBytes: int(l.MessageBytes),
			CallTimeout:  l.CallTimeout,
			ResultBytes:  int(l.ResultBytes),
			ApprovalWait: l.ApprovalWait,
			Pending:      int(l.PendingApprovals),
			GrantTTL:     l.GrantTTL,
			StartTimeout: l.StartTimeout,
		},
		StartupWait: cfg.StartupWaitInForce(),
		Session: gate.Limits{
			CallsPerSession:       l.CallsPerSession,
			CallsPerToolPerMinute: l.CallsPerToolPerMinute,
			IdenticalCallRepeats:  l.IdenticalCallRepeats,
			ConsecutiveDenials:    l.ConsecutiveDenials,
		},
		LogDir:  filepath.Join(filepath.Dir(cfg.Ledger.Path), "logs"),
		Version: version,
		Log:     log,
	}
}
