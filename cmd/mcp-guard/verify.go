package main

import (
	"fmt"
	"strings"

	"github.com/mcp-guard/mcp-guard/internal/jsonl"
	"github.com/mcp-guard/mcp-guard/ledger"
)

// cmdVerify walks the ledger's hash chain and checks every row log,
// approvals and pin list read against it: exit 0 with the counts when all
// is intact, exit 1 naming the first event or row that is not. With
// --witness it also checks the ledger against the chain heads a witness
// holds (a cut tail, a recomputed chain, conflicting heads); without one
// it says what it cannot detect. It prints the head either way.
func cmdVerify(args []string, c cli) error {
	fs := newFlagSet("verify")
	var lf ledgerFlags
	lf.register(fs)
	asJSON := fs.Bool("json", false, "print one JSON object per line (fields: README)")
	var sources multiFlag
	fs.Var(&sources, "witness", "check against the heads of this witness: journal, journal:DIR, syslog:PATH, file:PATH, head:SEQ:HASH (repeatable)")
	if err := parseFlags(fs, args, c); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErr("verify: unexpected argument %q", fs.Arg(0))
	}
	ctx := c.ctx
	var heads []ledger.Head
	for _, s := range sources {
		hs, err := ledger.ReadHeads(ctx, s)
		if err != nil { // nothing was checked: not a failed check (exit 1)
			return usageErr("verify: --witness: %v; nothing was verified", err)
		}
		heads = append(heads, hs...)
	}
	led, err := lf.open(ctx, c)
	if err != nil {
		return err
	}
	defer led.Close()
	rep, err := led.Verify(ctx)
	if err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	// With --json, one line says what was found, whichever way it ends;
	// the exit code and the message on stderr are as without it.
	out := verifyJSON{Type: "verify", Ledger: led.Path(), OK: rep.OK, Events: rep.Events, Rows: rep.Rows, Witness: strings.Join(sources, ", ")}
	emit := func(err error) error {
		if *asJSON {
			if werr := jsonl.NewWriter(c.stdout).Write(out); werr != nil && err == nil {
				return werr
			}
		}
		return err
	}
	switch {
	case !rep.OK && rep.Table != "":
		out.BadRow, out.Problem = rep.Table+" "+rep.Key, rep.Problem
		return emit(&exitError{code: 1, err: fmt.Errorf("ledger %s is damaged: row %s: the hash chain is intact, but the table no longer matches it", led.Path(), rep.Problem)})
	case !rep.OK:
		out.BadSeq, out.Problem = rep.BadSeq, rep.Problem
		return emit(&exitError{code: 1, err: fmt.Errorf("ledger %s is damaged at event %d: %s", led.Path(), rep.BadSeq, rep.Problem)})
	}
	head, err := led.FileHead(ctx)
	if err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	out.HeadSeq, out.HeadHash = head.Seq, head.Hash
	say := func(format string, a ...any) { // the text output; --json prints out instead
		if !*asJSON {
			fmt.Fprintf(c.stdout, format, a...)
		}
	}
	ok := "ok: "
	if len(sources) > 0 {
		ok = "" // said after the witness is checked
	}
	say("ledger %s: %s%d events, hash chain intact; %d rows (sessions, calls, call_args, approvals, pins, scopes, labels) match it\n", led.Path(), ok, rep.Events, rep.Rows)
	say("%s\n", headLine(head))
	if len(sources) == 0 {
		out.NotCovered = "no witness given: a chain recomputed from an edited event, or a tail cut with the head rewound, is not detected"
		say("not checked: without --witness, verify cannot detect a chain recomputed from an edited event, or a tail cut with the head rewound, by anyone who can write this file (its owner, or a tool running as them). Check against a witness: verify --witness journal (or syslog:PATH, file:PATH, head:SEQ:HASH)\n")
		return emit(nil)
	}
	wr, err := led.CheckHeads(ctx, heads)
	if err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	from := out.Witness
	out.OK, out.WitnessHeads, out.CoveredSeq, out.NotCovered = wr.OK, wr.Heads, wr.Covered.Seq, wr.Uncovered()
	if !wr.OK {
		out.Problem = wr.Problem
		return emit(&exitError{code: 1, err: fmt.Errorf("ledger %s does not match its witness (%s): %s", led.Path(), from, wr.Problem)})
	}
	if wr.Heads == 0 {
		out.NotCovered = notCovered(wr)
		say("witness %s: holds no head of this ledger (first event %s): nothing to check it against; %s\n", from, dash(wr.Identity), notCovered(wr))
		return emit(nil)
	}
	say("witness %s: ok: %d witnessed heads of this ledger match it, up to seq %d (%s)\n", from, wr.Heads, wr.Covered.Seq, wr.Covered.Why)
	if u := wr.Uncovered(); u != "" {
		say("not covered: %s: a cut or rewrite of them would not be seen\n", u)
	}
	return emit(nil)
}

func notCovered(wr ledger.WitnessReport) string {
	if u := wr.Uncovered(); u != "" {
		return u
	}
	return "the ledger has no events"
}
