package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/mcp-guard/mcp-guard/approvals"
	"github.com/mcp-guard/mcp-guard/internal/safetext"
	"github.com/mcp-guard/mcp-guard/ledger"
)

// cmdApprovals lists approvals (pending first page by default) or shows one.
func cmdApprovals(args []string, c cli) error {
	sub := "list"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		sub, args = args[0], args[1:]
	}
	fs := newFlagSet("approvals " + sub)
	var lf ledgerFlags
	lf.register(fs)
	state := fs.String("state", "pending", "only approvals in this state (\"\" for all)")
	before := fs.Int64("before", 0, "approvals older than this ID (the next page)")
	limit := fs.Int("limit", 50, "approvals per page")
	var idArg string
	if sub == "show" && len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		idArg, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		return usageErr("approvals: %v", err)
	}
	switch *state {
	case "", ledger.ApprovalPending, ledger.ApprovalApproved, ledger.ApprovalDenied, ledger.ApprovalExpired, ledger.ApprovalWithdrawn, ledger.ApprovalUsed:
	default:
		return usageErr("approvals: --state %q: want pending, approved, denied, expired, withdrawn, used, or \"\" for all", *state)
	}
	ctx := context.Background()
	switch sub {
	case "list":
		led, err := lf.open(ctx, c)
		if err != nil {
			return err
		}
		defer led.Close()
		as, err := led.Approvals(ctx, *state, *before, *limit)
		if err != nil {
			return err
		}
		tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "ID\tSTATE\tCALL\tEXPIRES")
		for _, a := range as {
			name := safetext.Escape(a.Server + "/" + a.Tool)
			if approvals.Check(a) != nil {
				name += " (TAMPERED: not shown, not decidable)"
			} else {
				name = approvals.Title(a)
			}
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", a.ID, a.State, safetext.Cut(name, 160), a.ExpiresAt.Local().Format("15:04:05"))
		}
		tw.Flush()
		if len(as) == *limit {
			fmt.Fprintf(c.stdout, "(more: mcp-guard approvals --before %d)\n", as[len(as)-1].ID)
		}
		return nil
	case "show":
		id, err := strconv.ParseInt(idArg, 10, 64)
		if err != nil {
			return usageErr("approvals show: want an approval ID, got %q", idArg)
		}
		led, err := lf.open(ctx, c)
		if err != nil {
			return err
		}
		defer led.Close()
		a, err := readApproval(ctx, led, id)
		if err != nil {
			return err
		}
		showApproval(c, a)
		return nil
	}
	return usageErr("approvals: unknown subcommand %q (list, show)", sub)
}

func readApproval(ctx context.Context, led *ledger.Ledger, id int64) (ledger.Approval, error) {
	a, err := led.Approval(ctx, id)
	if errors.Is(err, ledger.ErrNotFound) {
		return a, &exitError{code: 1, err: fmt.Errorf("no approval %d", id)}
	}
	if err != nil {
		return a, err
	}
	if err := approvals.Check(a); err != nil {
		return a, &exitError{code: 1, err: fmt.Errorf("approval %d: %w", id, err)}
	}
	return a, nil
}

func showApproval(c cli, a ledger.Approval) {
	fmt.Fprintf(c.stdout, "approval  %d (%s, call %d, expires %s)\n", a.ID, a.State, a.CallID, a.ExpiresAt.Local().Format("15:04:05"))
	fmt.Fprint(c.stdout, a.Presentation)
	fmt.Fprintf(c.stdout, "shown     %s\n", a.PresentationDigest)
}

// cmdDecide approves or denies one pending approval. The decision names the
// digest of the presentation the operator read (--shown); on a terminal
// without it, the approval is shown and the operator is asked.
func cmdDecide(verb string, args []string, c cli) error {
	var idArg string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		idArg, args = args[0], args[1:]
	}
	fs := newFlagSet(verb)
	var lf ledgerFlags
	lf.register(fs)
	shown := fs.String("shown", "", "the digest of the presentation you read (approvals show prints it)")
	reason := fs.String("reason", "", "why (the model reads it when you deny)")
	if err := fs.Parse(args); err != nil {
		return usageErr("%s: %v", verb, err)
	}
	if idArg == "" && fs.NArg() > 0 {
		idArg = fs.Arg(0)
	}
	id, err := strconv.ParseInt(idArg, 10, 64)
	if err != nil {
		return usageErr("%s: want an approval ID, got %q", verb, idArg)
	}
	ctx := context.Background()
	led, err := lf.open(ctx, c)
	if err != nil {
		return err
	}
	defer led.Close()
	if *shown == "" {
		if !isTerminal(c.stdin) {
			return usageErr("%s: give --shown D, the digest `mcp-guard approvals show %d` prints, so that what you decide is what you read", verb, id)
		}
		a, err := readApproval(ctx, led, id)
		if err != nil {
			return err
		}
		showApproval(c, a)
		fmt.Fprintf(c.stdout, "%s approval %d? [y/N] ", strings.ToUpper(verb[:1])+verb[1:], id)
		line, _ := bufio.NewReader(c.stdin).ReadString('\n')
		if a := strings.TrimSpace(strings.ToLower(line)); a != "y" && a != "yes" {
			fmt.Fprintln(c.stdout, "nothing changed")
			return nil
		}
		*shown = a.PresentationDigest
	}
	err = led.DecideApproval(ctx, id, *shown, verb == "approve", *reason, approvals.Check)
	switch {
	case errors.Is(err, ledger.ErrStale):
		return &exitError{code: 1, err: fmt.Errorf("%s %d: the approval is not the one with digest %s; run mcp-guard approvals show %d again", verb, id, *shown, id)}
	case errors.Is(err, ledger.ErrNotFound):
		return &exitError{code: 1, err: fmt.Errorf("%s: no approval %d (mcp-guard approvals lists them)", verb, id)}
	case errors.Is(err, ledger.ErrConflict), errors.Is(err, approvals.ErrTampered):
		return &exitError{code: 1, err: fmt.Errorf("%s %d refused: %v", verb, id, err)}
	case err != nil:
		return err
	}
	fmt.Fprintf(c.stdout, "%s approval %d\n", map[string]string{"approve": "approved", "deny": "denied"}[verb], id)
	return nil
}
