package main

import "fmt"

// cmdCheck validates a config without starting anything.
func cmdCheck(args []string, c cli) error {
	cfg, err := configFlags("check", args, c)
	if err != nil {
		return err
	}
	for _, w := range cfg.Warnings() {
		fmt.Fprintf(c.stdout, "warning: %s\n", w)
	}
	checkSandboxes(cfg, c)
	for _, s := range cfg.Servers {
		if s.URL == "" {
			continue
		}
		if _, err := s.UpstreamHeader(c.env)(); err != nil {
			fmt.Fprintf(c.stdout, "warning: server %s: %v\n", s.Name, err)
		}
	}
	fmt.Fprintf(c.stdout, "%s: ok: %d servers, %d rules; ledger %s\n", cfg.Path(), len(cfg.Servers), len(cfg.Rules), cfg.Ledger.Path)
	return nil
}
