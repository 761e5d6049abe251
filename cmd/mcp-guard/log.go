package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/mcp-guard/mcp-guard/internal/jsonl"
	"github.com/mcp-guard/mcp-guard/internal/safetext"
	"github.com/mcp-guard/mcp-guard/ledger"
)

// cmdLog prints recorded calls, newest first, one page at a time (keyset
// paging: --before ID continues where a page ended). With --follow it then
// prints new calls as they are recorded, until interrupted. Text a model or
// a server chose is shown escaped and cut.
func cmdLog(args []string, c cli) error {
	fs := newFlagSet("log")
	var lf ledgerFlags
	lf.register(fs)
	var f ledger.CallFilter
	fs.StringVar(&f.Server, "server", "", "only calls to this server")
	fs.StringVar(&f.Tool, "tool", "", "only calls to this tool (its upstream name)")
	fs.StringVar(&f.State, "status", "", "only calls in this state: started, done, failed, refused, cancelled, interrupted, waiting")
	fs.StringVar(&f.Kind, "kind", "", "only calls of this kind: tool, prompt (prompts/get), resource (resources/read), or what a server asked of the host: sampling, elicitation, roots")
	since := fs.String("since", "", "only calls since this long ago (90m, 24h) or this time (RFC 3339)")
	fs.IntVar(&f.Limit, "limit", 50, "calls per page (at most 1000)")
	fs.Int64Var(&f.Before, "before", 0, "show calls older than this call ID (the next page)")
	follow := fs.Bool("follow", false, "keep printing new calls")
	verbose := fs.Bool("v", false, "show arguments and result digests")
	asJSON := fs.Bool("json", false, "print one JSON object per line (fields: README)")
	labels := fs.Bool("labels", false, "show label events instead of calls: labels gained (with the call), declassified, ended")
	if err := parseFlags(fs, args, c); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErr("log: unexpected argument %q", fs.Arg(0))
	}
	switch f.State {
	case "", ledger.StateStarted, ledger.StateDone, ledger.StateFailed, ledger.StateRefused, ledger.StateCancelled, ledger.StateInterrupted, ledger.StateWaiting:
	default:
		return usageErr("log: --status %q: want started, done, failed, refused, cancelled, interrupted or waiting", f.State)
	}
	switch f.Kind {
	case "", ledger.KindTool, ledger.KindPrompt, ledger.KindResource, ledger.KindSampling, ledger.KindElicitation, ledger.KindRoots:
	default:
		return usageErr("log: --kind %q: want tool, prompt, resource, sampling, elicitation or roots", f.Kind)
	}
	if f.Limit < 1 || f.Limit > 1000 {
		return usageErr("log: --limit %d: want 1 to 1000", f.Limit)
	}
	if *since != "" {
		t, err := parseSince(*since, time.Now())
		if err != nil {
			return usageErr("log: --since: %v", err)
		}
		f.Since = t
	}
	ctx, stop := signal.NotifyContext(c.ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	led, err := lf.open(ctx, c)
	if err != nil {
		return err
	}
	defer led.Close()
	if *labels {
		return printLabelEvents(c.stdout, led, ctx, f, *asJSON)
	}
	jw := jsonl.NewWriter(c.stdout)
	show := func(r ledger.CallRow) error {
		if *asJSON {
			return jw.Write(callRecord(r))
		}
		printCall(c.stdout, r, *verbose)
		return nil
	}

	rows, err := led.Calls(ctx, f)
	if err != nil {
		return fmt.Errorf("log: %w", err)
	}
	var newest int64
	for i := len(rows) - 1; i >= 0; i-- { // oldest of the page first, like a log
		if err := show(rows[i]); err != nil {
			return err
		}
	}
	if len(rows) > 0 {
		newest = rows[0].ID
		if len(rows) == f.Limit && !*follow && !*asJSON {
			fmt.Fprintf(c.stdout, "(more: mcp-guard log --before %d)\n", rows[len(rows)-1].ID)
		}
	}
	if *verbose && f.Before == 0 {
		if err := printRedactions(c.stdout, led, ctx, f.Limit); err != nil {
			return err
		}
	}
	if !*follow {
		return nil
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(250 * time.Millisecond):
		}
		page := f
		page.Before, page.Limit = 0, 1000
		rows, err := led.Calls(ctx, page)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("log: %w", err)
		}
		for i := len(rows) - 1; i >= 0; i-- {
			if rows[i].ID > newest {
				if err := show(rows[i]); err != nil {
					return err
				}
				newest = rows[i].ID
			}
		}
	}
}

func parseSince(s string, now time.Time) (time.Time, error) {
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return time.Time{}, fmt.Errorf("%q: want a positive duration", s)
		}
		return now.Add(-d), nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q: want a duration such as 90m or a time such as 2026-11-29T10:00:00Z", s)
	}
	return t, nil
}

// printCall prints one call on one line (plus detail lines with -v). A
// prompts/get is named server/prompt:NAME and a resources/read
// server/resource:URI, as their pins are.
func printCall(w io.Writer, r ledger.CallRow, verbose bool) {
	name := r.Server + "/" + r.Tool
	if r.Kind == ledger.KindPrompt || r.Kind == ledger.KindResource {
		name = r.Server + "/" + r.Kind + ":" + r.Tool // as pins name them
	}
	if r.Server == "" {
		name = r.Exposed
		if r.Kind == ledger.KindPrompt || r.Kind == ledger.KindResource {
			name = r.Kind + " " + r.Exposed
		}
	}
	line := fmt.Sprintf("#%d %s %s %s %s", r.ID, r.StartedAt.Local().Format("2006-01-02 15:04:05"),
		safetext.Show(name, 120), r.Decision, r.State)
	if r.Rule > 0 {
		line += fmt.Sprintf(" rule=%d", r.Rule)
	}
	if r.Class != "" {
		line += " class=" + r.Class
	}
	if r.State == "done" || r.State == "failed" || r.State == "cancelled" {
		line += fmt.Sprintf(" %s", r.Duration.Round(time.Millisecond))
	}
	if r.IsError {
		line += " isError"
	}
	if r.Reason != "" {
		line += " reason=" + safetext.Show(r.Reason, 200)
	}
	if r.Err != "" {
		line += " error=" + safetext.Show(r.Err, 200)
	}
	if r.Late != nil {
		line += " late-outcome"
	}
	if r.DecodeError != "" {
		line += " UNREADABLE=" + safetext.Show(r.DecodeError, 200)
	}
	fmt.Fprintln(w, line)
	if !verbose {
		return
	}
	if len(r.Args) > 0 {
		fmt.Fprintf(w, "    args %s\n", safetext.Show(string(r.Args), 2000))
	}
	if len(r.ArgsInvalid) > 0 {
		fmt.Fprintf(w, "    args (not valid JSON, kept verbatim) %s\n", safetext.Show(string(r.ArgsInvalid), 2000))
	}
	if r.ResultDigest != "" {
		fmt.Fprintf(w, "    result %d bytes sha256:%s\n", r.ResultBytes, r.ResultDigest)
	}
	if r.Late != nil {
		fmt.Fprintf(w, "    late outcome: %s %d bytes sha256:%s %s\n", r.Late.State, r.Late.ResultBytes, r.Late.ResultDigest,
			strings.TrimSpace(safetext.Show(r.Late.Err, 200)))
	}
}

// printLabelEvents prints a page of label events, oldest of the page first.
func printLabelEvents(w io.Writer, led *ledger.Ledger, ctx context.Context, f ledger.CallFilter, asJSON bool) error {
	evs, err := led.LabelEvents(ctx, f.Before, f.Limit)
	if err != nil {
		return fmt.Errorf("log: %w", err)
	}
	if asJSON {
		jw := jsonl.NewWriter(w)
		for i := len(evs) - 1; i >= 0; i-- {
			e := evs[i]
			o := labelEventJSON{Type: "label_event", Seq: e.Seq, At: jsonTime(e.At), Kind: e.Kind, Labels: []string{}, DecodeError: e.DecodeError}
			if e.DecodeError == "" {
				var b struct {
					Scope, Label, Reason, Session string
					Call                          int64
					Labels                        []string
				}
				if err := json.Unmarshal(e.Body, &b); err != nil {
					o.DecodeError = err.Error()
				} else {
					o.Scope, o.Label, o.Reason, o.Session, o.Call = b.Scope, b.Label, b.Reason, b.Session, b.Call
					if b.Labels != nil {
						o.Labels = b.Labels
					}
				}
			}
			if err := jw.Write(o); err != nil {
				return err
			}
		}
		return nil
	}
	if len(evs) == 0 {
		fmt.Fprintln(w, "no label events")
		return nil
	}
	for i := len(evs) - 1; i >= 0; i-- {
		e := evs[i]
		var b struct {
			Scope, Label, Reason, Session string
			Call                          int64
			Labels                        []string
		}
		if e.DecodeError != "" || json.Unmarshal(e.Body, &b) != nil {
			fmt.Fprintf(w, "%s event %d %s: does not decode: %s\n", e.At.Format(time.RFC3339), e.Seq, safetext.Show(e.Kind, 40), safetext.Show(e.DecodeError, 200))
			continue
		}
		line := ""
		switch e.Kind {
		case "label.gained":
			line = fmt.Sprintf("%s gained %s (call %d)", safetext.Show(b.Scope, 100), safetext.Show(b.Label, 40), b.Call)
		case "label.declassified":
			line = fmt.Sprintf("%s declassified %s (it came with call %d): %s", safetext.Show(b.Scope, 100), safetext.Show(b.Label, 40), b.Call, safetext.Show(b.Reason, 300))
		case "labels.ended":
			line = fmt.Sprintf("%s labels ended (%s): %s", safetext.Show(b.Scope, 100), safetext.Show(strings.Join(b.Labels, ", "), 200), safetext.Show(b.Reason, 300))
		case "scope.joined":
			line = fmt.Sprintf("%s joined by session %s", safetext.Show(b.Scope, 100), safetext.Show(b.Session, 40))
		default:
			line = fmt.Sprintf("%s %s", safetext.Show(b.Scope, 100), safetext.Show(e.Kind, 40))
		}
		fmt.Fprintf(w, "%s event %-5d %s\n", e.At.Format(time.RFC3339), e.Seq, line)
	}
	if len(evs) == f.Limit {
		fmt.Fprintf(w, "(more: mcp-guard log --labels --before %d)\n", evs[len(evs)-1].Seq)
	}
	return nil
}

// printRedactions (log -v) prints the newest credentials redacted from
// messages to hosts, oldest of the page first: which secret (server and
// name, or the found-credential rule), how it was written, where. The
// ledger holds no value to show.
func printRedactions(w io.Writer, led *ledger.Ledger, ctx context.Context, limit int) error {
	evs, err := led.RedactionEvents(ctx, 0, limit)
	if err != nil {
		return fmt.Errorf("log: %w", err)
	}
	for i := len(evs) - 1; i >= 0; i-- {
		e := evs[i]
		var b struct {
			Host, Message string
			Hits          []struct{ Server, Name, Rule, Encoding, At string }
		}
		if e.DecodeError != "" || json.Unmarshal(e.Body, &b) != nil {
			fmt.Fprintf(w, "%s event %d %s: does not decode: %s\n", e.At.Format(time.RFC3339), e.Seq, safetext.Show(e.Kind, 40), safetext.Show(e.DecodeError, 200))
			continue
		}
		for _, h := range b.Hits {
			what := h.Server + " " + h.Name
			if h.Rule != "" {
				what = "credential " + h.Rule
			}
			fmt.Fprintf(w, "%s event %-5d redacted %s (%s) at %s in %s to host %s\n", e.At.Format(time.RFC3339), e.Seq,
				safetext.Show(what, 120), safetext.Show(h.Encoding, 20), safetext.Show(h.At, 200), safetext.Show(b.Message, 80), safetext.Show(b.Host, 80))
		}
	}
	return nil
}
