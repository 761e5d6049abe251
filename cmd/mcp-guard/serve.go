package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/mcp-guard/mcp-guard/gate"
	"github.com/mcp-guard/mcp-guard/proxy"
)

// cmdServe runs the proxy for one host on stdin/stdout. Everything mcp-guard
// itself has to say goes to stderr; stdout carries MCP messages only.
func cmdServe(args []string, c cli) error {
	cfg, err := configFlags("serve", args, c)
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(c.stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	for _, w := range cfg.warnings {
		log.Warn("config: " + w)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	p, err := proxy.New(ctx, proxyOptions(cfg, c.env, log))
	if err != nil {
		return err
	}
	defer p.Close()
	if err := p.ServeStdio(ctx, c.stdin, c.stdout); err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	return nil
}

func proxyOptions(cfg *Config, env envFunc, log *slog.Logger) proxy.Options {
	var ups []proxy.UpstreamSpec
	for _, s := range cfg.Servers {
		ups = append(ups, proxy.UpstreamSpec{
			Name:    s.Name,
			Command: s.Command,
			Env:     childEnv(s, env),
			Dir:     s.Cwd,
		})
	}
	return proxy.Options{
		Upstreams: ups,
		Gate:      gate.New(cfg.rules),
		Limits: proxy.Limits{
			MessageBytes: int(cfg.limits.MessageBytes),
			CallTimeout:  cfg.limits.CallTimeout,
		},
		LogDir:  filepath.Join(filepath.Dir(cfg.Ledger.Path), "logs"),
		Version: version,
		Log:     log,
	}
}
