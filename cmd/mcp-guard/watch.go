package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/mcp-guard/mcp-guard/approvals"
	"github.com/mcp-guard/mcp-guard/ledger"
)

// cmdWatch is the operator's terminal: each call waiting for approval (from
// any serve process sharing the ledger) appears with a bell, shown exactly as
// it will run, and the operator approves it, denies it with a reason, or
// skips it. A decision names the digest of what was shown. It ends at end of
// input or on an interrupt.
func cmdWatch(args []string, c cli) error {
	fs := newFlagSet("watch")
	var lf ledgerFlags
	lf.register(fs)
	if err := fs.Parse(args); err != nil {
		return usageErr("watch: %v", err)
	}
	if fs.NArg() > 0 {
		return usageErr("watch: unexpected argument %q", fs.Arg(0))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	led, err := lf.open(ctx, c)
	if err != nil {
		return err
	}
	defer led.Close()

	lines := make(chan string)
	go func() { // the operator's answers, a line each; closed at end of input
		defer close(lines)
		r := bufio.NewReader(c.stdin)
		for {
			l, err := r.ReadString('\n')
			if l != "" || err == nil {
				select {
				case lines <- strings.TrimSpace(l):
				case <-ctx.Done():
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	read := func() (string, bool) {
		select {
		case l, ok := <-lines:
			return l, ok
		case <-ctx.Done():
			return "", false
		}
	}

	fmt.Fprintln(c.stdout, "mcp-guard watch: waiting for calls that need your approval (Ctrl-C to stop)")
	done := map[int64]bool{}
	for {
		as, err := led.Approvals(ctx, ledger.ApprovalPending, 0, 1000)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		var next *ledger.Approval
		for i := len(as) - 1; i >= 0; i-- { // oldest first
			if !done[as[i].ID] {
				next = &as[i]
				break
			}
		}
		if next == nil {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(250 * time.Millisecond):
			}
			continue
		}
		done[next.ID] = true
		if !decideOne(ctx, c.stdout, led, *next, read) {
			return nil
		}
	}
}

// decideOne shows one approval and acts on the operator's answer; it returns
// false when input ended.
func decideOne(ctx context.Context, w io.Writer, led *ledger.Ledger, a ledger.Approval, read func() (string, bool)) bool {
	fmt.Fprintf(w, "\a\n── approval %d ── expires %s\n", a.ID, a.ExpiresAt.Local().Format("15:04:05"))
	if err := approvals.Check(a); err != nil {
		fmt.Fprintf(w, "approval %d was changed outside mcp-guard: it is not shown and cannot be decided\n", a.ID)
		return true
	}
	fmt.Fprint(w, a.Presentation)
	fmt.Fprintf(w, "shown     %s\n", a.PresentationDigest)
	for {
		fmt.Fprint(w, "[a]pprove  [d]eny  [s]kip > ")
		answer, ok := read()
		if !ok {
			fmt.Fprintln(w)
			return false
		}
		var approve bool
		reason := ""
		switch strings.ToLower(answer) {
		case "a", "approve", "y", "yes":
			approve = true
		case "d", "deny", "n", "no":
			fmt.Fprint(w, "reason (the model reads it) > ")
			if reason, ok = read(); !ok {
				fmt.Fprintln(w)
				return false
			}
		case "s", "skip":
			fmt.Fprintf(w, "skipped approval %d (decide it later with mcp-guard approvals show %d)\n", a.ID, a.ID)
			return true
		default:
			continue
		}
		err := led.DecideApproval(ctx, a.ID, a.PresentationDigest, approve, reason, approvals.Check)
		switch {
		case err == nil && approve:
			fmt.Fprintf(w, "approved approval %d\n", a.ID)
		case err == nil:
			fmt.Fprintf(w, "denied approval %d\n", a.ID)
		case errors.Is(err, ledger.ErrConflict), errors.Is(err, ledger.ErrStale):
			fmt.Fprintf(w, "approval %d was not decided: %v\n", a.ID, err)
		default:
			fmt.Fprintf(w, "approval %d: %v\n", a.ID, err)
		}
		return true
	}
}
