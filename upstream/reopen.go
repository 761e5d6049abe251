package upstream

import "time"

// reopen paces the opening again of one event stream that the server keeps
// ending: the standalone GET stream, or an answer stream resumed by
// Last-Event-ID. The first wait is the server's retry time (at least
// minResume) or, when it set none, the Backoff's Min. A stream that ended
// sooner than the wait before it doubles the wait, up to Max; one that
// lasted as long keeps it; one that lasted Max starts again from the
// first. A retry time the server sets is honoured up to Max. So a server
// that ends each stream at once is opened again less and less often,
// whatever retry time it sets.
type reopen struct {
	b    Backoff
	wait time.Duration
}

// next is the wait before opening the stream again, after one that lasted
// lasted; retry is the server's retry time (0: none).
func (r *reopen) next(lasted, retry time.Duration) time.Duration {
	retry = min(retry, r.b.Max)
	switch {
	case r.wait == 0 || lasted >= r.b.Max:
		r.wait = r.b.Min
		if retry > 0 {
			r.wait = max(retry, minResume)
		}
	case lasted < r.wait:
		r.wait = min(2*r.wait, r.b.Max)
	}
	return max(r.wait, retry)
}
