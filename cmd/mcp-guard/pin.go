package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"golang.org/x/term"

	"github.com/mcp-guard/mcp-guard/internal/jsonl"
	"github.com/mcp-guard/mcp-guard/internal/safetext"
	"github.com/mcp-guard/mcp-guard/ledger"
	"github.com/mcp-guard/mcp-guard/pin"
)

const pinUsage = `usage:
  mcp-guard pin list   [--server S] [--json]
  mcp-guard pin diff   SERVER/TOOL          what changed, and the digest to accept
  mcp-guard pin accept SERVER/TOOL [--digest D]
  mcp-guard pin reject SERVER/TOOL [--digest D]
SERVER/ (no tool) names the server's instructions.`

// cmdPin lists pins and lets the operator accept or reject a definition
// after seeing it. A decision names the digest of what was shown, so a
// definition that changed in between is not accepted by mistake.
func cmdPin(args []string, c cli) error {
	if len(args) == 0 {
		return usageErr("pin: give a subcommand\n%s", pinUsage)
	}
	sub, rest := args[0], args[1:]
	if strings.HasPrefix(sub, "-") { // pin --help
		sub, rest = "", args
	}
	fs := newFlagSet("pin " + sub)
	var lf ledgerFlags
	lf.register(fs)
	server := fs.String("server", "", "only this server's pins")
	asJSON := fs.Bool("json", false, "pin list: "+"print one JSON object per line (fields: README)")
	digest := fs.String("digest", "", "the digest of the definition you were shown (from pin diff)")
	// Flags may come before or after SERVER/TOOL.
	var target string
	if len(rest) > 0 && !strings.HasPrefix(rest[0], "-") {
		target, rest = rest[0], rest[1:]
	}
	if err := parseFlags(fs, rest, c); err != nil {
		return err
	}
	if target == "" && fs.NArg() > 0 {
		target = fs.Arg(0)
	} else if fs.NArg() > 0 {
		return usageErr("pin %s: unexpected argument %q", sub, fs.Arg(0))
	}
	if sub == "" {
		return usageErr("pin: give a subcommand\n%s", pinUsage)
	}
	if *asJSON && sub != "list" {
		return usageErr("pin %s: --json is for pin list", sub)
	}
	ctx := c.ctx
	needTarget := func() (string, string, error) {
		s, t, ok := strings.Cut(target, "/")
		if !ok || s == "" {
			return "", "", usageErr("pin %s: want SERVER/TOOL, got %q\n%s", sub, target, pinUsage)
		}
		return s, t, nil
	}
	switch sub {
	case "list":
		if target != "" {
			return usageErr("pin list: unexpected argument %q", target)
		}
		led, err := lf.open(ctx, c)
		if err != nil {
			return err
		}
		defer led.Close()
		return pinList(ctx, c, led, *server, *asJSON)
	case "diff", "accept", "reject":
		s, t, err := needTarget()
		if err != nil {
			return err
		}
		led, err := lf.open(ctx, c)
		if err != nil {
			return err
		}
		defer led.Close()
		p, err := led.Pin(ctx, s, t)
		if errors.Is(err, ledger.ErrNotFound) {
			return &exitError{code: 1, err: fmt.Errorf("pin %s: no pin for %s: run mcp-guard tools to see what the servers list", sub, pinName(s, t))}
		}
		if err != nil {
			return err
		}
		if sub == "diff" {
			showPin(c.stdout, p)
			return nil
		}
		shown := *digest
		if shown == "" {
			if !isTerminal(c.stdin) {
				return usageErr("pin %s: give --digest D, the digest `mcp-guard pin diff %s` shows, so that what you decide is what you saw", sub, target)
			}
			if p.PendingDigest == "" {
				return &exitError{code: 1, err: fmt.Errorf("pin %s: %s is %s: nothing to decide", sub, pinName(s, t), p.State)}
			}
			showPin(c.stdout, p)
			fmt.Fprintf(c.stdout, "%s this definition of %s? [y/N] ", strings.ToUpper(sub[:1])+sub[1:], safetext.Show(pinName(s, t), 200))
			line, _ := bufio.NewReader(c.stdin).ReadString('\n')
			if a := strings.TrimSpace(strings.ToLower(line)); a != "y" && a != "yes" {
				fmt.Fprintln(c.stdout, "nothing changed")
				return nil
			}
			shown = p.PendingDigest
		}
		if sub == "accept" {
			err = led.AcceptPin(ctx, s, t, shown)
		} else {
			err = led.RejectPin(ctx, s, t, shown)
		}
		if errors.Is(err, ledger.ErrStale) {
			return &exitError{code: 1, err: fmt.Errorf("pin %s: %s: the definition is no longer the one with digest %s; run mcp-guard pin diff %s again", sub, pinName(s, t), shown, target)}
		}
		if err != nil {
			return &exitError{code: 1, err: fmt.Errorf("pin %s: %w", sub, err)}
		}
		verb := map[string]string{"accept": "accepted", "reject": "rejected"}[sub]
		fmt.Fprintf(c.stdout, "%s %s (sha256:%s); a running mcp-guard serve picks this up within a second\n", verb, safetext.Show(pinName(s, t), 200), shown)
		return nil
	}
	return usageErr("pin: unknown subcommand %q\n%s", sub, pinUsage)
}

func pinName(server, tool string) string {
	if tool == "" {
		return server + "/ (instructions)"
	}
	return server + "/" + tool
}

func pinList(ctx context.Context, c cli, led *ledger.Ledger, server string, asJSON bool) error {
	pins, err := led.Pins(ctx, server)
	if err != nil {
		return err
	}
	if asJSON {
		jw := jsonl.NewWriter(c.stdout)
		for _, p := range pins {
			if err := jw.Write(pinRecord(p)); err != nil {
				return err
			}
		}
		return nil
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PIN\tSTATE\tPINNED\tPENDING\tSINCE")
	for _, p := range pins {
		state := p.State
		if p.DecodeError != "" {
			state = "UNREADABLE: " + p.DecodeError
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", safetext.Show(pinName(p.Server, p.Tool), 100), safetext.Show(state, 100),
			short(p.Digest), short(p.PendingDigest), p.UpdatedAt.Local().Format("2006-01-02 15:04"))
	}
	return tw.Flush()
}

func short(d string) string {
	if d == "" {
		return "-"
	}
	if len(d) > 12 {
		return d[:12]
	}
	return d
}

// showPin prints a pin and, when a definition waits for a decision, the diff
// between the accepted and the pending one, escaped for the terminal.
func showPin(w io.Writer, p ledger.Pin) {
	fmt.Fprintf(w, "%s: %s\n", safetext.Show(pinName(p.Server, p.Tool), 200), p.State)
	if p.Digest != "" {
		fmt.Fprintf(w, "  pinned   sha256:%s\n", p.Digest)
	}
	if p.PendingDigest == "" {
		fmt.Fprintln(w, "  nothing waits for a decision")
		return
	}
	fmt.Fprintf(w, "  pending  sha256:%s\n\n", p.PendingDigest)
	fmt.Fprintln(w, pin.Diff(p.Raw, p.PendingRaw))
	fmt.Fprintf(w, "\nto accept: mcp-guard pin accept %s/%s --digest %s\n", p.Server, p.Tool, p.PendingDigest)
	fmt.Fprintf(w, "to reject: mcp-guard pin reject %s/%s --digest %s\n", p.Server, p.Tool, p.PendingDigest)
}

// isTerminal reports whether r is a terminal the operator types at (not
// /dev/null, a pipe or a file).
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
