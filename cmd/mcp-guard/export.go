package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/mcp-guard/mcp-guard/config"
	"github.com/mcp-guard/mcp-guard/export"
	"github.com/mcp-guard/mcp-guard/ledger"
)

// exportGrace is how long serve, stopping, keeps sending what is queued.
const exportGrace = 2 * time.Second

// newExporter returns the [export] otlp exporter, or nil when export is off.
// led, when set, gives the ledger identity and each call's event hash.
func newExporter(cfg *config.Config, env config.EnvFunc, led *ledger.Ledger, log *slog.Logger) (*export.Exporter, error) {
	e := cfg.Export
	if e.OTLP == "" {
		return nil, nil
	}
	h, err := e.ExportHeader(env)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cfg.Path(), err)
	}
	opts := export.Options{Endpoint: e.OTLP, Headers: h, IncludeArguments: e.IncludeArguments, Version: version, Log: log}
	if led != nil {
		opts.Lookup = led.CallEvent
		opts.Identity = func(ctx context.Context) string {
			hd, err := led.CommittedHead(ctx)
			if err != nil {
				return ""
			}
			return hd.Ledger
		}
	}
	return export.New(opts)
}

// startExport starts serve's exporter (nil when export is off): it says at
// start whether the collector can be reached, and keeps a status file for
// `tools` until stop is called. stop sends what is queued (within
// exportGrace) and logs the counts.
func startExport(ctx context.Context, cfg *config.Config, env config.EnvFunc, led *ledger.Ledger, log *slog.Logger) (x *export.Exporter, stop func(), err error) {
	x, err = newExporter(cfg, env, led, log)
	if err != nil || x == nil {
		return nil, func() {}, err
	}
	if err := x.Probe(ctx); err != nil {
		log.Warn("export: the collector cannot be reached now; calls go on, records wait in a bounded queue (the oldest dropped when full)", "endpoint", x.Endpoint(), "err", err.Error())
	} else {
		log.Info("export: otlp", "endpoint", x.Endpoint(), "include_arguments", x.IncludeArguments())
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	ran := make(chan struct{})
	go func() {
		defer close(ran)
		x.Run(runCtx, exportGrace)
	}()
	dir, pid := otlpStatusDir(cfg), os.Getpid()
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		t := time.NewTicker(2 * time.Second)
		defer t.Stop()
		var last export.Stats
		for first := true; ; first = false {
			if s := x.Stats(); first || s != last {
				last = s
				if err := export.WriteStatus(dir, export.Status{PID: pid, Endpoint: x.Endpoint(), Updated: time.Now(), Stats: s}); err != nil && first {
					log.Warn("export: status for `tools` not written", "err", err.Error())
				}
			}
			select {
			case <-runCtx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return x, func() {
		cancel()
		<-ran
		<-wrote
		export.RemoveStatus(dir, pid)
		s := x.Stats()
		log.Info("export: stopped", "endpoint", x.Endpoint(), "exported", s.Exported, "dropped", s.Dropped, "failed", s.Failed)
	}, nil
}

func otlpStatusDir(cfg *config.Config) string { return export.StatusDir(cfg.Ledger.Path) }

// exportStatus is what `tools` says of [export]: whether the collector can
// be reached, and each running serve's counts.
func exportStatus(ctx context.Context, cfg *config.Config, env config.EnvFunc) []string {
	x, err := newExporter(cfg, env, nil, nil)
	if err != nil {
		return []string{"export: " + err.Error()}
	}
	if x == nil {
		return nil
	}
	line := fmt.Sprintf("export: otlp %s (reachable)", x.Endpoint())
	pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := x.Probe(pctx); err != nil {
		line = fmt.Sprintf("export: otlp %s (UNREACHABLE: %v)", x.Endpoint(), err)
	}
	out := []string{line}
	sts, _ := export.ReadStatuses(otlpStatusDir(cfg))
	for _, s := range sts {
		l := fmt.Sprintf("export: serve pid %d: exported %d, dropped %d, failed %d, queued %d (at %s)", s.PID, s.Exported, s.Dropped, s.Failed, s.Queued, s.Updated.Format(time.RFC3339))
		if s.LastErr != "" {
			l += "; last error: " + s.LastErr
		}
		out = append(out, l)
	}
	return out
}
