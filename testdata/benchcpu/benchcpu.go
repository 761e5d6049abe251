// Package benchcpu holds what the benchmarks share: the CPU time a
// benchmark's process spent per operation, every thread counted (on a
// shared machine the wall time per operation drifts with the neighbours'
// load, the CPU spent doing the work much less), and b.N operations run by
// several goroutines at once.
package benchcpu

import (
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// Meter is the process's CPU time when it was started.
type Meter struct{ start time.Duration }

// Start reads the process's CPU time (user and system) now.
func Start() Meter { return Meter{start: used()} }

// Report adds the metric "cpu-µs/op": the process's CPU time since Start
// divided by b.N. Call it where the timed loop ends.
func (m Meter) Report(b *testing.B) {
	if b.N == 0 {
		return
	}
	b.ReportMetric(float64((used()-m.start).Microseconds())/float64(b.N), "cpu-µs/op")
}

func used() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// Concurrent runs b.N calls of op over g goroutines and waits for them; an
// op that fails stops its goroutine and fails the benchmark.
func Concurrent(b *testing.B, g int, op func() error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range g {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(b.N) {
				if err := op(); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}
