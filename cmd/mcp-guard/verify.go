package main

import (
	"context"
	"fmt"
)

// cmdVerify walks the ledger's hash chain and checks every row log,
// approvals and pin list read against it: exit 0 with the counts when all
// is intact, exit 1 naming the first event or row that is not.
func cmdVerify(args []string, c cli) error {
	fs := newFlagSet("verify")
	var lf ledgerFlags
	lf.register(fs)
	if err := fs.Parse(args); err != nil {
		return usageErr("verify: %v", err)
	}
	if fs.NArg() > 0 {
		return usageErr("verify: unexpected argument %q", fs.Arg(0))
	}
	ctx := context.Background()
	led, err := lf.open(ctx, c)
	if err != nil {
		return err
	}
	defer led.Close()
	rep, err := led.Verify(ctx)
	if err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	switch {
	case !rep.OK && rep.Table != "":
		return &exitError{code: 1, err: fmt.Errorf("ledger %s is damaged: row %s: the hash chain is intact, but the table no longer matches it", led.Path(), rep.Problem)}
	case !rep.OK:
		return &exitError{code: 1, err: fmt.Errorf("ledger %s is damaged at event %d: %s", led.Path(), rep.BadSeq, rep.Problem)}
	}
	fmt.Fprintf(c.stdout, "ledger %s: ok: %d events, hash chain intact; %d rows (sessions, calls, approvals, pins) match it\n", led.Path(), rep.Events, rep.Rows)
	return nil
}
