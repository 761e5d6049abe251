package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/mcp-guard/mcp-guard/approvals"
	"github.com/mcp-guard/mcp-guard/config"
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
	if err := parseFlags(fs, args, c); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErr("watch: unexpected argument %q", fs.Arg(0))
	}
	ctx, stop := signal.NotifyContext(c.ctx, os.Interrupt, syscall.SIGTERM)
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
	if h, err := led.FileHead(ctx); err == nil {
		fmt.Fprintln(c.stdout, "ledger "+headLine(h))
	}
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
		if !decideOne(ctx, c.stdout, c.terminal(), pager(c.env, c.terminal(), c.stdout), led, *next, read) {
			return nil
		}
	}
}

// decideOne shows one approval and acts on the operator's answer; it returns
// false when input ended. A decision names the digest of what was shown, and
// only a view that showed every byte decides: when the first view was cut,
// [f] shows the whole call (through the pager) and then it can be decided.
func decideOne(ctx context.Context, w, term io.Writer, page func(string) error, led *ledger.Ledger, a ledger.Approval, read func() (string, bool)) bool {
	io.WriteString(term, "\a") // the bell: mcp-guard's own, so raw
	fmt.Fprintf(w, "\n── approval %d ── expires %s\n", a.ID, a.ExpiresAt.Local().Format("15:04:05"))
	if err := approvals.Check(a); err != nil {
		fmt.Fprintf(w, "approval %d was changed outside mcp-guard: it is not shown and cannot be decided\n", a.ID)
		return true
	}
	fmt.Fprint(w, a.Presentation)
	fmt.Fprintf(w, "shown     %s\n", a.PresentationDigest)
	shown, cut := a.PresentationDigest, approvals.Cut(a)
	for {
		if cut > 0 {
			fmt.Fprintf(w, "this view cut %d bytes: [f]ull view (then decide)  [s]kip > ", cut)
		} else {
			fmt.Fprint(w, "[a]pprove  [d]eny  [s]kip > ")
		}
		answer, ok := read()
		if !ok {
			fmt.Fprintln(w)
			return false
		}
		var approve bool
		reason := ""
		switch strings.ToLower(answer) {
		case "f", "full":
			text, digest := approvals.Full(a)
			body := fmt.Sprintf("approval %d, shown whole\n%sshown     %s\n", a.ID, text, digest)
			if err := page(body); err != nil {
				fmt.Fprintf(w, "pager: %v; here it is whole:\n", err)
				fmt.Fprint(w, body)
			}
			fmt.Fprintf(w, "shown     %s (every byte)\n", digest)
			shown, cut = digest, 0
			continue
		case "a", "approve", "y", "yes", "d", "deny", "n", "no":
			if cut > 0 {
				fmt.Fprintf(w, "this view cut %d bytes; press f to see it all, then decide (or run `mcp-guard approvals show %d --full`)\n", cut, a.ID)
				continue
			}
		}
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
		err := led.DecideApproval(ctx, a.ID, shown, approve, reason, approvals.Decidable)
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

// pager shows text through $PAGER when it is set (run by the shell, as git
// and man do, reading the text on its stdin and drawing on the terminal
// term, raw, since a pager drives the terminal), else prints it whole to w.
// The text is escaped (approvals.Full): it carries no raw control.
func pager(env config.EnvFunc, term, w io.Writer) func(string) error {
	return func(text string) error {
		cmdline, ok := env("PAGER")
		if !ok || strings.TrimSpace(cmdline) == "" {
			_, err := io.WriteString(w, text)
			return err
		}
		cmd := exec.Command("/bin/sh", "-c", cmdline)
		cmd.Stdin = strings.NewReader(text)
		cmd.Stdout, cmd.Stderr = term, term
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("$PAGER %q: %w", cmdline, err)
		}
		return nil
	}
}
