package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mcp-guard/mcp-guard/config"
	"github.com/mcp-guard/mcp-guard/gate"
	"github.com/mcp-guard/mcp-guard/internal/jsonl"
	"github.com/mcp-guard/mcp-guard/internal/safetext"
	"github.com/mcp-guard/mcp-guard/ledger"
)

// cmdSessions lists the label scopes that have a live serve process or
// hold labels: each scope's sessions (pid, host, alive) and its labels
// with the call that brought each. A scope none of whose processes has
// been alive for the grace period loses its labels first, recorded.
func cmdSessions(args []string, c cli) error {
	fs := newFlagSet("sessions")
	var lf ledgerFlags
	lf.register(fs)
	asJSON := fs.Bool("json", false, "print one JSON object per line (fields: README)")
	if err := parseFlags(fs, args, c); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErr("sessions: unexpected argument %q", fs.Arg(0))
	}
	ctx := c.ctx
	// A serve is alive until its heartbeat is older than its lease: the
	// config's; with only --ledger, the longest lease a config may set, so
	// no live process's labels end early.
	lease, grace := time.Hour, defaultScopeGrace
	if lf.ledger == "" {
		if cp, err := configPath(lf.config, c.env); err == nil {
			if cfg, err := config.Load(cp, c.env); err == nil {
				lease, grace = cfg.LeaseTTL(), scopeGrace(cfg)
			}
		}
	}
	led, err := lf.openWith(ctx, c, ledger.Options{LeaseTTL: lease})
	if err != nil {
		return err
	}
	defer led.Close()
	ended, err := led.ExpireScopes(ctx, grace)
	if err != nil {
		return fmt.Errorf("sessions: %w", err)
	}
	scopes, err := led.Scopes(ctx)
	if err != nil {
		return fmt.Errorf("sessions: %w", err)
	}
	if *asJSON {
		jw := jsonl.NewWriter(c.stdout)
		for _, s := range scopes {
			o := scopeJSON{Type: "scope", Scope: s.Name, Sessions: []sessionJSON{}, Labels: []labelJSON{}}
			for _, ss := range s.Sessions {
				o.Sessions = append(o.Sessions, sessionJSON{ss.ID, ss.PID, ss.Host, ss.Alive, jsonTime(ss.StartedAt)})
			}
			for _, l := range s.Labels {
				o.Labels = append(o.Labels, labelJSON{l.Label, l.CallID, gate.Since(l)})
			}
			if err := jw.Write(o); err != nil {
				return err
			}
		}
		return nil
	}
	for _, s := range ended {
		fmt.Fprintf(c.stdout, "scope %s: its labels ended now: no process of it was alive for %s\n", safetext.Show(s, 100), grace)
	}
	if len(scopes) == 0 {
		fmt.Fprintln(c.stdout, "no live scope and no labels")
		return nil
	}
	for _, s := range scopes {
		fmt.Fprintf(c.stdout, "scope %s\n", safetext.Show(s.Name, 100))
		for _, ss := range s.Sessions {
			state := "alive"
			if !ss.Alive {
				state = "gone"
			}
			fmt.Fprintf(c.stdout, "  session %s pid %d %s (%s, since %s)\n", ss.ID, ss.PID, safetext.Show(ss.Host, 100), state, ss.StartedAt.Format(time.RFC3339))
		}
		if len(s.Labels) == 0 {
			fmt.Fprintln(c.stdout, "  labels  none")
		}
		for _, l := range s.Labels {
			fmt.Fprintf(c.stdout, "  label   %s\n", gate.Since(l))
		}
	}
	return nil
}

// defaultScopeGrace is the grace period sessions applies without a config:
// serve's with the default lease (twice ledger.lease_ttl).
const defaultScopeGrace = 30 * time.Second

// cmdDeclassify ends a label in a scope on the operator's word, with a
// reason, recorded in the chain; the scope's next request no longer holds it.
func cmdDeclassify(args []string, c cli) error {
	fs := newFlagSet("declassify")
	var lf ledgerFlags
	lf.register(fs)
	reason := fs.String("reason", "", "why the label may go (recorded)")
	var pos, rest []string
	for _, a := range args { // positional arguments may come before or after flags
		if strings.HasPrefix(a, "-") || (len(rest) > 0 && !strings.Contains(rest[len(rest)-1], "=") && takesDeclassifyValue(rest[len(rest)-1])) {
			rest = append(rest, a)
		} else {
			pos = append(pos, a)
		}
	}
	if err := parseFlags(fs, rest, c); err != nil {
		return err
	}
	if len(pos) != 2 {
		return usageErr("declassify: want SCOPE LABEL --reason R (mcp-guard sessions lists scopes and their labels)")
	}
	if strings.TrimSpace(*reason) == "" {
		return usageErr("declassify: --reason is required: it is recorded with the decision")
	}
	scope, label := pos[0], pos[1]
	ctx := c.ctx
	led, err := lf.open(ctx, c)
	if err != nil {
		return err
	}
	defer led.Close()
	call, err := led.Declassify(ctx, scope, label, *reason)
	if errors.Is(err, ledger.ErrNotFound) {
		return &exitError{code: 1, err: fmt.Errorf("declassify: scope %s does not hold %s (mcp-guard sessions lists what each scope holds)", safetext.Show(scope, 100), safetext.Show(label, 40))}
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(c.stdout, "declassified %s in scope %s (it came with call %d); recorded; the scope's next call no longer holds it\n", safetext.Show(label, 40), safetext.Show(scope, 100), call)
	return nil
}

func takesDeclassifyValue(a string) bool {
	switch strings.TrimLeft(a, "-") {
	case "config", "ledger", "reason":
		return true
	}
	return false
}
