// Command otelcol runs the OpenTelemetry Collector's own OTLP receiver
// (otlpreceiver, OTLP/HTTP only) on an address and prints every export it
// receives as one line: "logs " or "traces " and the OTLP/JSON the
// collector's pdata marshals. mcp-guard's end-to-end tests build it with
// go build in this directory: a module of its own, so the collector's
// dependencies never enter mcp-guard's go.mod.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configgrpc"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/consumer"
	"go.opentelemetry.io/collector/pdata/plog"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/receiver/otlpreceiver"
	"go.opentelemetry.io/collector/receiver/receivertest"
)

func main() {
	addr := flag.String("http", "127.0.0.1:4318", "OTLP/HTTP address")
	flag.Parse()
	var mu sync.Mutex
	out := func(kind string, b []byte) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Printf("%s %s\n", kind, b)
	}
	logs, _ := consumer.NewLogs(func(_ context.Context, ld plog.Logs) error {
		b, err := (&plog.JSONMarshaler{}).MarshalLogs(ld)
		if err == nil {
			out("logs", b)
		}
		return err
	})
	traces, _ := consumer.NewTraces(func(_ context.Context, td ptrace.Traces) error {
		b, err := (&ptrace.JSONMarshaler{}).MarshalTraces(td)
		if err == nil {
			out("traces", b)
		}
		return err
	})
	f := otlpreceiver.NewFactory()
	cfg := f.CreateDefaultConfig().(*otlpreceiver.Config)
	http := *cfg.Protocols.HTTP.GetOrInsertDefault()
	http.ServerConfig.NetAddr.Endpoint = *addr
	cfg.Protocols.HTTP = configoptional.Some(http)
	cfg.Protocols.GRPC = configoptional.None[configgrpc.ServerConfig]()
	set := receivertest.NewNopSettings(f.Type())
	ctx := context.Background()
	lr, err := f.CreateLogs(ctx, set, cfg, logs)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	tr, err := f.CreateTraces(ctx, set, cfg, traces)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	host := nopHost{}
	if err := lr.Start(ctx, host); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := tr.Start(ctx, host); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Fprintln(os.Stderr, "listening", *addr)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	_ = lr.Shutdown(ctx)
	_ = tr.Shutdown(ctx)
}

type nopHost struct{}

func (nopHost) GetExtensions() map[component.ID]component.Component { return nil }
