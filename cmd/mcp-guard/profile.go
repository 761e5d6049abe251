package main

import (
	"fmt"
	"os"
	"runtime/pprof"
	"runtime/trace"

	"github.com/mcp-guard/mcp-guard/config"
)

// startProfile writes a CPU profile of this process to the file named by
// $MCP_GUARD_CPUPROFILE, if set, until the returned stop is called, and
// then the allocations made since it started to that name + ".allocs";
// and an execution trace (goroutine hand-offs, syscalls, wake-ups) to the
// file named by $MCP_GUARD_TRACE, if set: how scripts/bench finds where a
// call's time goes.
func startProfile(env config.EnvFunc) (stop func(), err error) {
	stopCPU, err := startCPUProfile(env)
	if err != nil {
		return nil, err
	}
	path, ok := env("MCP_GUARD_TRACE")
	if !ok || path == "" {
		return stopCPU, nil
	}
	f, err := os.Create(path)
	if err == nil {
		err = trace.Start(f)
		if err != nil {
			f.Close()
		}
	}
	if err != nil {
		stopCPU()
		return nil, fmt.Errorf("MCP_GUARD_TRACE: %w", err)
	}
	return func() {
		trace.Stop()
		f.Close()
		stopCPU()
	}, nil
}

func startCPUProfile(env config.EnvFunc) (stop func(), err error) {
	path, ok := env("MCP_GUARD_CPUPROFILE")
	if !ok || path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("MCP_GUARD_CPUPROFILE: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("MCP_GUARD_CPUPROFILE: %w", err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
		if a, err := os.Create(path + ".allocs"); err == nil {
			pprof.Lookup("allocs").WriteTo(a, 0)
			a.Close()
		}
	}, nil
}
