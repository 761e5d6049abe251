package main

import (
	"context"
	"flag"
	"io"

	"github.com/mcp-guard/mcp-guard/config"
	"github.com/mcp-guard/mcp-guard/ledger"
)

// ledgerFlags adds --config and --ledger to fs; after parsing, open opens
// the ledger named by --ledger, else the one the config names.
type ledgerFlags struct {
	config, ledger string
}

func (lf *ledgerFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&lf.config, "config", "", "config file (for its [ledger] path)")
	fs.StringVar(&lf.ledger, "ledger", "", "ledger file (instead of the config's)")
}

func (lf *ledgerFlags) open(ctx context.Context, c cli) (*ledger.Ledger, error) {
	return lf.openWith(ctx, c, ledger.Options{})
}

// openWith is open with the ledger options given.
func (lf *ledgerFlags) openWith(ctx context.Context, c cli, opts ledger.Options) (*ledger.Ledger, error) {
	path := lf.ledger
	if path != "" {
		p, err := config.ExpandPath(path, c.env)
		if err != nil {
			return nil, usageErr("--ledger: %v", err)
		}
		path = p
	} else {
		cp, err := configPath(lf.config, c.env)
		if err != nil {
			return nil, usageErr("%v", err)
		}
		cfg, err := config.Load(cp, c.env)
		if err != nil {
			return nil, err
		}
		path = cfg.Ledger.Path
	}
	return ledger.Open(ctx, path, opts)
}

func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}
