package main

import (
	"fmt"
	"log/slog"
	"os"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/mcp-guard/mcp-guard/config"
	"github.com/mcp-guard/mcp-guard/internal/jsonl"
	"github.com/mcp-guard/mcp-guard/internal/safetext"
	"github.com/mcp-guard/mcp-guard/ledger"
	"github.com/mcp-guard/mcp-guard/proxy"
)

// cmdTools starts every upstream, lists its tools, prompts, resources and
// resource templates and prints what the host would see. It waits for every
// server (each up to limits.start_timeout per step) and exits 1 when one
// could not be listed, saying why (a server that did not answer included).
func cmdTools(args []string, c cli) error {
	fs := newFlagSet("tools")
	path := fs.String("config", "", "config file")
	asJSON := fs.Bool("json", false, "print one JSON object per line (fields: README)")
	if err := parseFlags(fs, args, c); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErr("tools: unexpected argument %q", fs.Arg(0))
	}
	cp, err := configPath(*path, c.env)
	if err != nil {
		return usageErr("tools: %v", err)
	}
	cfg, err := config.Load(cp, c.env)
	if err != nil {
		return err
	}
	log := operatorLog(c.stderr, slog.LevelWarn)
	ctx := c.ctx
	led, err := ledger.Open(ctx, cfg.Ledger.Path, ledger.Options{})
	if err != nil {
		return err
	}
	defer led.Close()
	sess, err := led.StartSession(ctx, ledger.SessionInfo{Kind: "tools", Host: "cli", PID: os.Getpid()})
	if err != nil {
		return err
	}
	defer sess.End(ctx)
	opts := proxyOptions(cfg, c, log)
	opts.Ledger, opts.Lease = led, sess
	checkSignIns(opts, led)
	opts.DryRun = true  // listing tools pins nothing: serve does that
	opts.WaitAll = true // a one-shot listing waits for every server, each up to limits.start_timeout
	p, err := proxy.New(ctx, opts)
	if err != nil {
		return err
	}
	defer p.Close()
	if *asJSON {
		return toolsJSON(c, cfg, p)
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tTOOL\tEXPOSED AS\tPIN\tCLASS\tACTION\tRULE")
	for _, t := range p.Tools() {
		exposed := t.Exposed
		if exposed == "" {
			exposed = "hidden: " + t.Hidden
		}
		rule := "-"
		if t.Rule > 0 {
			rule = fmt.Sprint(t.Rule)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", safetext.Show(t.Server, 64), safetext.Show(t.Tool, 64), safetext.Show(exposed, 300),
			dash(t.PinState), dash(t.Class), dash(t.Action), rule)
	}
	tw.Flush()
	if items := p.Items(); len(items) > 0 {
		fmt.Fprintln(c.stdout)
		tw = tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "SERVER\tKIND\tNAME OR URI\tEXPOSED AS\tPIN\tACTION\tRULE")
		for _, it := range items {
			exposed := it.Exposed
			if exposed == "" {
				exposed = "hidden: " + it.Hidden
			}
			rule := "-"
			if it.Rule > 0 {
				rule = fmt.Sprint(it.Rule)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", safetext.Show(it.Server, 64), it.Kind, safetext.Show(it.Key, 120), safetext.Show(exposed, 300),
				dash(it.PinState), dash(it.Action), rule)
		}
		tw.Flush()
	}
	if line, err := probeWitnesses(cfg, c.env); err == nil {
		fmt.Fprintln(c.stdout, line)
	}
	for _, line := range exportStatus(ctx, cfg, c.env) {
		fmt.Fprintln(c.stdout, safetext.Show(line, 600))
	}
	for _, s := range cfg.Servers {
		if sb := serverSandbox(s, c); sb != nil {
			fmt.Fprintf(c.stdout, "server %s: %s\n", s.Name, sandboxSummary(s, sb))
		}
	}
	itemsFailed := p.ItemsFailed()
	for _, f := range itemsFailed {
		fmt.Fprintf(c.stdout, "server %s\n", safetext.Show(f, 300))
	}
	failed := p.Failed()
	if len(failed) == 0 {
		if len(itemsFailed) > 0 {
			return &exitError{code: 1, err: fmt.Errorf("%d listings of prompts or resources failed", len(itemsFailed))}
		}
		return nil
	}
	names := make([]string, 0, len(failed))
	for n := range failed {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(c.stdout, "server %s: not listed: %v\n", n, failed[n])
	}
	return &exitError{code: 1, err: fmt.Errorf("%d of %d servers could not be listed", len(failed), len(cfg.Servers))}
}

// toolsJSON prints what tools prints as JSON lines: a record per tool,
// prompt, resource and template, then one per listing that failed; it
// exits 1 as tools does when one failed.
func toolsJSON(c cli, cfg *config.Config, p *proxy.Proxy) error {
	jw := jsonl.NewWriter(c.stdout)
	for _, t := range p.Tools() {
		if err := jw.Write(toolRecord(t)); err != nil {
			return err
		}
	}
	for _, it := range p.Items() {
		if err := jw.Write(itemRecord(it)); err != nil {
			return err
		}
	}
	itemsFailed := p.ItemsFailed()
	for _, f := range itemsFailed {
		server, msg, _ := strings.Cut(f, ": ")
		if err := jw.Write(serverProblemJSON{"server_error", server, msg}); err != nil {
			return err
		}
	}
	failed := p.Failed()
	names := make([]string, 0, len(failed))
	for n := range failed {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := jw.Write(serverProblemJSON{"server_error", n, "not listed: " + failed[n].Error()}); err != nil {
			return err
		}
	}
	switch {
	case len(failed) > 0:
		return &exitError{code: 1, err: fmt.Errorf("%d of %d servers could not be listed", len(failed), len(cfg.Servers))}
	case len(itemsFailed) > 0:
		return &exitError{code: 1, err: fmt.Errorf("%d listings of prompts or resources failed", len(itemsFailed))}
	}
	return nil
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
