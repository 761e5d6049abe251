package main

import (
	"context"
	"fmt"

	"github.com/mcp-guard/mcp-guard/classify"
	"github.com/mcp-guard/mcp-guard/config"
)

// cmdCheck validates a config without starting anything; with --server
// NAME, as serve --server NAME would run it.
func cmdCheck(args []string, c cli) error {
	flags := newFlagSet("check")
	path := flags.String("config", "", "config file")
	only := flags.String("server", "", "check the config as serve --server NAME runs it")
	if err := parseFlags(flags, args, c); err != nil {
		return err
	}
	if flags.NArg() > 0 {
		return usageErr("check: unexpected argument %q", flags.Arg(0))
	}
	p, err := configPath(*path, c.env)
	if err != nil {
		return usageErr("check: %v", err)
	}
	cfg, err := config.LoadServing(p, c.env, *only) // every problem at once, located
	if err != nil {
		return err
	}
	if err := onlyServer("check", cfg, *only); err != nil {
		return err
	}
	for _, w := range cfg.Warnings() {
		fmt.Fprintf(c.stdout, "warning: %s\n", w)
	}
	for _, w := range cfg.CompiledRules().Overlaps(cfg.ServerNames()) {
		fmt.Fprintf(c.stdout, "warning: %s\n", w)
	}
	checkSandboxes(cfg, c)
	printSecrets(c.stdout, cfg, c.env)
	for _, s := range cfg.Servers {
		if s.URL == "" {
			continue
		}
		if _, err := s.UpstreamHeader(c.env)(); err != nil {
			fmt.Fprintf(c.stdout, "warning: server %s: %v\n", s.Name, err)
		}
	}
	line, err := probeWitnesses(cfg, c.env)
	if err != nil {
		return err
	}
	fmt.Fprintln(c.stdout, line)
	printFlows(c, cfg)
	fmt.Fprintf(c.stdout, "%s: ok: %d servers, %d rules; ledger %s\n", cfg.Path(), len(cfg.Servers), len(cfg.Rules), cfg.Ledger.Path)
	return nil
}

// probeWitnesses says which configured witnesses can be reached now,
// without writing to any of them.
func probeWitnesses(cfg *config.Config, env config.EnvFunc) (string, error) {
	ex, err := newExporter(cfg, env, nil, nil)
	if err != nil {
		return "", err
	}
	com, err := newCommitter(cfg, nil, nil, ex)
	if err != nil {
		return "", err
	}
	defer com.Close()
	line, ok := witnessStatus(context.Background(), cfg, com)
	if !ok && cfg.WitnessInForce().Required {
		line += " (ledger.witness_required is true: serve will refuse to start)"
	}
	return line, nil
}

// printFlows prints the flows in force and where each comes from.
func printFlows(c cli, cfg *config.Config) {
	f := cfg.FlowsInForce()
	switch {
	case f.Defaults():
		fmt.Fprintln(c.stdout, "flows: the defaults (the config has no [[flow]]; flows = [] turns them off):")
	case len(cfg.Flow) > 0:
		fmt.Fprintf(c.stdout, "flows: %d from the config:\n", len(cfg.Flow))
	default:
		fmt.Fprintln(c.stdout, "flows: off (flows = []), but for the reserved one:")
	}
	for _, fl := range f.InForce() {
		switch fl.Source {
		case classify.FlowReserved:
			fmt.Fprintf(c.stdout, "  %s [reserved: a [[flow]] from = \"secret\" changes it]\n", fl.Flow)
		case classify.FlowWritten:
			fmt.Fprintf(c.stdout, "  %s [flow[%d]]\n", fl.Flow, fl.Index)
		default:
			fmt.Fprintf(c.stdout, "  %s [default]\n", fl.Flow)
		}
	}
}
