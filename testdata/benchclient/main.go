// Command benchclient is scripts/bench's streamable HTTP client: the official
// Go SDK's client, which spends a fraction of the CPU per call that the
// TypeScript SDK's HTTP client does, so an HTTP row measures the gateway and
// not the client. It takes the plan bench.mjs takes and prints the line it
// prints, in its "sync" form (benchsuite.mjs reads the gateway's CPU and RSS
// around the timed calls):
//
//	benchclient '{"url": "http://127.0.0.1:PORT/mcp", "tool": "echo", "calls": 500, "concurrency": 8}'
//
// It speaks protocol 2025-11-25 unless the plan says "protocol" (the
// TypeScript client's version, which every peer speaks). It connects, retries the first call for up to 60 s (a gateway may listen
// before its upstreams are up), warms up with 50 calls, prints "ready", waits
// for a line on stdin, then makes "calls" calls with "concurrency" callers on
// one session (each call's arguments made unique with a counter) and prints
// one JSON line with every call's latency.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

type plan struct {
	URL string `json:"url"`
	// Protocol is the version the client asks for: by default the
	// TypeScript SDK client's (bench.mjs), which every peer speaks, so
	// every HTTP row serves the same protocol.
	Protocol    string         `json:"protocol"`
	Tool        string         `json:"tool"`
	Arguments   map[string]any `json:"arguments"`
	Calls       int            `json:"calls"`
	Concurrency int            `json:"concurrency"`
}

type result struct {
	Calls          int     `json:"calls"`
	Concurrency    int     `json:"concurrency"`
	P50            int64   `json:"p50_us"`
	P99            int64   `json:"p99_us"`
	PerSecond      int64   `json:"calls_per_s"`
	PeakRSS        *int64  `json:"peak_rss_kib"`
	CPU            *int64  `json:"cpu_us_per_call"`
	ClientCPU      int64   `json:"client_cpu_us_per_call"`
	LatenciesMicro []int64 `json:"latencies_us"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "benchclient:", err)
		os.Exit(1)
	}
}

func run() error {
	if len(os.Args) != 2 {
		return fmt.Errorf("usage: benchclient PLAN_JSON")
	}
	var p plan
	if err := json.Unmarshal([]byte(os.Args[1]), &p); err != nil {
		return fmt.Errorf("plan: %w", err)
	}
	if p.URL == "" || p.Tool == "" {
		return fmt.Errorf("plan: url and tool are required")
	}
	if p.Calls <= 0 {
		p.Calls = 2000
	}
	if p.Concurrency <= 0 {
		p.Concurrency = 1
	}
	if p.Protocol == "" {
		p.Protocol = "2025-11-25"
	}
	ctx := context.Background()
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2 * p.Concurrency}}
	client := mcp.NewClient(&mcp.Implementation{Name: "mcp-guard-bench", Version: "1"}, nil)
	s, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: p.URL, HTTPClient: hc, DisableStandaloneSSE: true},
		&mcp.ClientSessionOptions{ProtocolVersion: p.Protocol})
	if err != nil {
		return fmt.Errorf("connect %s: %w", p.URL, err)
	}
	defer s.Close()

	var n atomic.Int64
	call := func() error {
		args := map[string]any{}
		for k, v := range p.Arguments {
			args[k] = v
		}
		args["message"] = fmt.Sprintf("m%d", n.Add(1))
		res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: p.Tool, Arguments: args})
		if err != nil {
			return fmt.Errorf("call %s: %w", p.Tool, err)
		}
		if res.IsError {
			b, _ := json.Marshal(res.Content)
			return fmt.Errorf("call %s: the result is an error: %s", p.Tool, b)
		}
		return nil
	}
	for i := 0; ; i++ {
		err := call()
		if err == nil {
			break
		}
		if i >= 300 {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
	for range 50 {
		if err := call(); err != nil {
			return err
		}
	}

	fmt.Println("ready")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		return fmt.Errorf("waiting for go: %w", err)
	}
	cpu0 := cpuMicros()
	start := time.Now()
	var (
		mu   sync.Mutex
		lat  = make([]int64, 0, p.Calls)
		left atomic.Int64
		wg   sync.WaitGroup
		errs = make(chan error, p.Concurrency)
	)
	left.Store(int64(p.Calls))
	for range p.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for left.Add(-1) >= 0 {
				t0 := time.Now()
				if err := call(); err != nil {
					errs <- err
					return
				}
				d := time.Since(t0).Microseconds()
				mu.Lock()
				lat = append(lat, d)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	seconds := time.Since(start).Seconds()
	cpu1 := cpuMicros()
	select {
	case err := <-errs:
		return err
	default:
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	out := result{
		Calls:          p.Calls,
		Concurrency:    p.Concurrency,
		P50:            lat[len(lat)/2],
		P99:            lat[len(lat)*99/100],
		PerSecond:      int64(float64(p.Calls)/seconds + 0.5),
		ClientCPU:      (cpu1 - cpu0) / int64(p.Calls),
		LatenciesMicro: lat,
	}
	return json.NewEncoder(os.Stdout).Encode(out)
}

// cpuMicros is this process's user + system CPU time so far.
func cpuMicros() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano()/1000 + ru.Stime.Nano()/1000
}
