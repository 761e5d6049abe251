package main

import (
	"fmt"
)

// cmdReset lets host sessions that a limit stopped (consecutive denials)
// continue: running serve processes pick it up within a second.
func cmdReset(args []string, c cli) error {
	fs := newFlagSet("reset")
	var lf ledgerFlags
	lf.register(fs)
	reason := fs.String("reason", "", "why (recorded in the ledger)")
	if err := parseFlags(fs, args, c); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErr("reset: unexpected argument %q", fs.Arg(0))
	}
	ctx := c.ctx
	led, err := lf.open(ctx, c)
	if err != nil {
		return err
	}
	defer led.Close()
	if err := led.RequestReset(ctx, *reason); err != nil {
		return err
	}
	fmt.Fprintln(c.stdout, "reset recorded: sessions stopped after refused calls may continue; a running mcp-guard serve picks this up within a second")
	return nil
}
