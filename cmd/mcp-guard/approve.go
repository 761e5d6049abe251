package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/mcp-guard/mcp-guard/approvals"
	"github.com/mcp-guard/mcp-guard/internal/jsonl"
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
	asJSON := fs.Bool("json", false, "print one JSON object per line (fields: README)")
	full := fs.Bool("full", false, "show: every byte of the call (a decision names this view's digest)")
	var idArg string
	if sub == "show" && len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		idArg, args = args[0], args[1:]
	}
	if err := parseFlags(fs, args, c); err != nil {
		return err
	}
	switch *state {
	case "", ledger.ApprovalPending, ledger.ApprovalApproved, ledger.ApprovalDenied, ledger.ApprovalExpired, ledger.ApprovalWithdrawn, ledger.ApprovalUsed:
	default:
		return usageErr("approvals: --state %q: want pending, approved, denied, expired, withdrawn, used, or \"\" for all", *state)
	}
	if *asJSON && sub != "list" {
		return usageErr("approvals %s: --json is for approvals list", sub)
	}
	ctx := c.ctx
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
		if *asJSON {
			jw := jsonl.NewWriter(c.stdout)
			for _, a := range as {
				err := approvals.Check(a)
				if err != nil { // as the table: a tampered row's text is not shown
					a.Server, a.Tool, a.Class, a.Labels, a.Reason = "", "", "", "", ""
				}
				if err := jw.Write(approvalRecord(a, err)); err != nil {
					return err
				}
			}
			return nil
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
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", a.ID, stateNow(a), safetext.Cut(name, 160), a.ExpiresAt.Local().Format("15:04:05"))
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
		if *full {
			showFull(c.stdout, a)
		} else {
			showApproval(c.stdout, a)
		}
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

// stateNow is a's state as the operator can act on it now: a pending
// approval past its lifetime is expired (it can no longer be decided),
// though its row says pending until something closes it.
func stateNow(a ledger.Approval) string {
	if a.State == ledger.ApprovalPending && time.Now().After(a.ExpiresAt) {
		return ledger.ApprovalExpired
	}
	return a.State
}

// showApproval prints the stored presentation of a, cut to bounds when the
// call is long; a cut view says how to see every byte, since only the
// digest of a view that showed every byte decides it.
func showApproval(w io.Writer, a ledger.Approval) {
	fmt.Fprintf(w, "approval  %d (%s, call %d, expires %s)\n", a.ID, stateNow(a), a.CallID, a.ExpiresAt.Local().Format("15:04:05"))
	fmt.Fprint(w, a.Presentation)
	fmt.Fprintf(w, "shown     %s\n", a.PresentationDigest)
	if n := approvals.Cut(a); n > 0 {
		fmt.Fprintf(w, "cut       this view left out %d bytes: it cannot be approved or denied; run `mcp-guard approvals show %d --full` and decide with the digest it prints\n", n, a.ID)
	}
}

// showFull prints every byte of a, escaped, and the digest a decision names.
func showFull(w io.Writer, a ledger.Approval) {
	text, digest := approvals.Full(a)
	fmt.Fprintf(w, "approval  %d (%s, call %d, expires %s), shown whole\n", a.ID, a.State, a.CallID, a.ExpiresAt.Local().Format("15:04:05"))
	fmt.Fprint(w, text)
	fmt.Fprintf(w, "shown     %s\n", digest)
}

// cutViewRefusal is the error for a decision that names the digest of a cut
// view of a: it says how to see every byte.
func cutViewRefusal(verb string, a ledger.Approval) error {
	return &exitError{code: 1, err: fmt.Errorf("%s %d refused: this view cut %d bytes; run `mcp-guard approvals show %d --full` and %s with the digest it prints",
		verb, a.ID, approvals.Cut(a), a.ID, verb)}
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
	if err := parseFlags(fs, args, c); err != nil {
		return err
	}
	if idArg == "" && fs.NArg() > 0 {
		idArg = fs.Arg(0)
	}
	id, err := strconv.ParseInt(idArg, 10, 64)
	if err != nil {
		return usageErr("%s: want an approval ID, got %q", verb, idArg)
	}
	ctx := c.ctx
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
		showFull(c.stdout, a) // a decision names the view that showed every byte
		fmt.Fprintf(c.stdout, "%s approval %d? [y/N] ", strings.ToUpper(verb[:1])+verb[1:], id)
		line, _ := bufio.NewReader(c.stdin).ReadString('\n')
		if a := strings.TrimSpace(strings.ToLower(line)); a != "y" && a != "yes" {
			fmt.Fprintln(c.stdout, "nothing changed")
			return nil
		}
		_, *shown = approvals.Full(a)
	}
	err = led.DecideApproval(ctx, id, *shown, verb == "approve", *reason, approvals.Decidable)
	switch {
	case errors.Is(err, ledger.ErrStale):
		if a, rerr := readApproval(ctx, led, id); rerr == nil && *shown == a.PresentationDigest && approvals.Cut(a) > 0 {
			return cutViewRefusal(verb, a)
		}
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
