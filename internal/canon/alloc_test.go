package canon

import "runtime"

// allocated returns the bytes f allocates on the heap: a measure of the
// work it does that, unlike the time it takes, does not depend on how
// loaded the machine is. This package's tests do not run in parallel, so
// nothing else allocates much meanwhile; bounds on it are set several
// times above today's cost and far below the cost of the unbounded path.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}
