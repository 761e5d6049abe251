package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/mcp-guard/mcp-guard/config"
	"github.com/mcp-guard/mcp-guard/export"
	"github.com/mcp-guard/mcp-guard/internal/witnessspec"
	"github.com/mcp-guard/mcp-guard/ledger"
)

// newCommitter opens the configured witnesses for led; the otlp witness
// sends through ex ([export] otlp).
func newCommitter(cfg *config.Config, led *ledger.Ledger, log *slog.Logger, ex *export.Exporter) (*ledger.Committer, error) {
	w := cfg.WitnessInForce()
	var ws []ledger.Witness
	for _, s := range w.Specs {
		if s.Kind == witnessspec.OTLP && ex != nil {
			ws = append(ws, export.NewWitness(ex))
			continue
		}
		x, err := ledger.OpenWitness(s)
		if err != nil {
			return nil, err
		}
		ws = append(ws, x)
	}
	return ledger.NewCommitter(led, ws, ledger.CommitterOptions{Every: w.Every, Interval: w.Interval, Log: log}), nil
}

// witnessStatus probes the witnesses and says, for the operator, what
// holds the chain head outside the file and what cannot be reached. ok is
// false when none can.
func witnessStatus(ctx context.Context, cfg *config.Config, com *ledger.Committer) (line string, ok bool) {
	names, errs := com.Witnesses(), com.Probe(ctx)
	for _, err := range errs {
		if err == nil {
			ok = true
		}
	}
	w := cfg.WitnessInForce()
	switch {
	case len(names) == 0 && w.Default:
		return "witness: none: no journal or syslog socket found on this machine, so nothing outside the ledger file holds its chain head; a cut tail or a recomputed chain cannot be detected. Set [ledger] witness (e.g. [\"file:/path/another/user/keeps\"])", false
	case len(names) == 0:
		return "witness: none ([ledger] witness = []): nothing outside the ledger file holds its chain head; a cut tail or a recomputed chain cannot be detected", false
	case !ok:
		return "witness: NONE REACHABLE: " + ledger.Describe(names, errs) + "; the chain head is not committed outside the ledger file", false
	}
	return "witness: " + ledger.Describe(names, errs), true
}

// startWitness opens and probes the witnesses at serve's start. It says
// loudly on log what cannot be reached, and returns an error (serve does
// not start) when ledger.witness_required is true and none can.
func startWitness(ctx context.Context, cfg *config.Config, led *ledger.Ledger, log *slog.Logger, ex *export.Exporter) (*ledger.Committer, error) {
	com, err := newCommitter(cfg, led, log, ex)
	if err != nil {
		return nil, err
	}
	line, ok := witnessStatus(ctx, cfg, com)
	switch {
	case !ok && cfg.WitnessInForce().Required:
		com.Close()
		return nil, fmt.Errorf("serve: ledger.witness_required is true in %s, and %s; fix with: start the witness (journald, a syslog daemon), name one that runs in [ledger] witness, or set witness_required = false", cfg.Path(), strings.TrimPrefix(line, "witness: "))
	case !ok:
		log.Error("WITNESS: " + strings.TrimPrefix(line, "witness: "))
	case strings.Contains(line, "UNREACHABLE"):
		log.Warn(line)
	default:
		log.Info(line)
	}
	return com, nil
}

// witnessFunc is what the gate's witness stage calls, or nil when no
// witness is configured (serve said so at start; every exec call would
// only repeat it).
func witnessFunc(com *ledger.Committer) func(ctx context.Context, why string) error {
	if len(com.Witnesses()) == 0 {
		return nil
	}
	return com.Commit
}

// headLine is the chain head for the operator to write down.
func headLine(h ledger.Head) string {
	if h.Seq == 0 {
		return "head: seq 0 (no events yet)"
	}
	return fmt.Sprintf("head: seq %d hash %s (write it down: verify --witness head:%d:%s shows a later cut or rewrite of these events)", h.Seq, h.Hash, h.Seq, h.Hash)
}
