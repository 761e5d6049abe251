// Package benchcpu reports the CPU time a benchmark's process spent per
// operation, every thread counted (the ledger's writer goroutine, the
// proxy's readers): on a shared machine the wall time per operation drifts
// with the neighbours' load, the CPU spent doing the work much less.
package benchcpu

import (
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
