package main

import (
	"context"
	"fmt"

	"github.com/mcp-guard/mcp-guard/config"
)

// cmdCheck validates a config without starting anything.
func cmdCheck(args []string, c cli) error {
	cfg, err := configFlags("check", args, c)
	if err != nil {
		return err
	}
	for _, w := range cfg.Warnings() {
		fmt.Fprintf(c.stdout, "warning: %s\n", w)
	}
	for _, s := range cfg.Servers {
		if s.URL == "" {
			continue
		}
		if _, err := s.UpstreamHeader(c.env)(); err != nil {
			fmt.Fprintf(c.stdout, "warning: server %s: %v\n", s.Name, err)
		}
	}
	line, err := probeWitnesses(cfg)
	if err != nil {
		return err
	}
	fmt.Fprintln(c.stdout, line)
	fmt.Fprintf(c.stdout, "%s: ok: %d servers, %d rules; ledger %s\n", cfg.Path(), len(cfg.Servers), len(cfg.Rules), cfg.Ledger.Path)
	return nil
}

// probeWitnesses says which configured witnesses can be reached now,
// without writing to any of them.
func probeWitnesses(cfg *config.Config) (string, error) {
	com, err := newCommitter(cfg, nil, nil)
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
