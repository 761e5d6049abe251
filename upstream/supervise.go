package upstream

import (
	"context"
	"math/rand/v2"
	"time"

	"github.com/mcp-guard/mcp-guard/config"
)

// Conn is one connection a Supervisor follows: what it needs of an
// upstream Client, and what its tests fake.
type Conn interface {
	Done() <-chan struct{}        // closed when the connection ends on its own
	Err() error                   // why it ended, once Done is closed
	ListChanged() <-chan struct{} // a signal when the server says its lists changed
	Close()
}

// Backoff paces the retries a server can drive, so that nothing it does
// (failing to start or to list, crashing, ending its event stream, a
// storm of list-changed notices) makes mcp-guard start, list or reopen
// it faster than this. BackoffOf reads it from the config's [limits]
// (retry_wait, retry_wait_max, relist_interval).
type Backoff struct {
	// Min is the first wait before a server that failed (it did not
	// start, its tools could not be listed, or it ended) is tried again.
	// The wait doubles with each failure in a row, up to Max.
	Min time.Duration
	// Max is the longest wait. A connection that stayed up this long
	// starts the next series of waits from Min again.
	Max time.Duration
	// Relist is the shortest time between two listings that list-changed
	// notices ask for. Notices that come sooner are answered by one
	// listing when it is due. The gap doubles with each listing a notice
	// asked for within Max of the one before, up to Max.
	Relist time.Duration
}

// BackoffOf is the Backoff the limits l set, Max at least Min and Relist
// at most Max.
func BackoffOf(l config.Limits) Backoff {
	b := Backoff{Min: l.RetryWait, Max: l.RetryWaitMax, Relist: l.RelistInterval}
	b.Max = max(b.Max, b.Min)
	b.Relist = min(b.Relist, b.Max)
	return b
}

// After is the wait after n failures in a row (n ≥ 1): Min·2ⁿ⁻¹, at most
// Max.
func (b Backoff) After(n int) time.Duration {
	d := b.Min
	for i := 1; i < n && d < b.Max; i++ {
		d *= 2
	}
	return min(d, b.Max)
}

// Jitter is d less a random part of up to a quarter of it, so that servers
// that failed together are not all tried again at the same moment.
func Jitter(d time.Duration) time.Duration {
	if d <= 4 {
		return d
	}
	return d - rand.N(d/4)
}

// Failure is what a Supervisor tells its owner of one failure.
type Failure struct {
	Err     error         // why: Connect's, Ready's or Changed's error, or why the connection ended
	First   bool          // the first start failed
	InARow  int           // failures in a row, this one counted
	RetryIn time.Duration // until the next try
}

// Supervisor keeps one upstream connected for as long as its context
// lasts: Start makes the first connection, Run follows it and, when it
// ends (a crash, a lost HTTP session), never came up or could not be
// listed, connects again after the Backoff's wait. What a connection means
// to its owner (listing its tools, checking pins, showing them to the
// host, withdrawing them) is the owner's, through the functions it sets;
// every one is required.
type Supervisor[C Conn] struct {
	Backoff Backoff
	// Connect starts (or dials) the upstream and initializes it.
	Connect func(ctx context.Context) (C, error)
	// Ready takes a new connection into use (first: at Start); an error
	// means it is not usable: the Supervisor closes it and tries again.
	Ready func(ctx context.Context, c C, first bool) error
	// Failed is told of each failure (Connect or Ready failed, a
	// connection in use ended or could not be listed again) and when the
	// next try is.
	Failed func(Failure)
	// Ended is told that a connection in use ended on its own, before
	// Failed is.
	Ended func(ctx context.Context, c C)
	// Changed lists the connection again: the server said its lists
	// changed. An error means it is no longer usable: the Supervisor
	// closes it and tries again.
	Changed func(ctx context.Context, c C) error

	// jitter spreads each wait (Jitter; the tests make it exact).
	jitter func(time.Duration) time.Duration

	cur   C             // the connection in use, when up
	up    bool          // cur is set
	fails int           // failures in a row
	wait  time.Duration // until the next try, once a try failed
	gap   time.Duration // between listings notices ask for
	asked time.Time     // when the last listing a notice asked for began
}

// Start makes the first connection and returns when it is in use or has
// failed (then Run tries again).
func (s *Supervisor[C]) Start(ctx context.Context) {
	if s.Backoff.Min <= 0 || s.Backoff.Relist <= 0 {
		panic("upstream: Supervisor.Backoff unset: retries would not wait (use BackoffOf)")
	}
	s.connect(ctx, true, s.Backoff)
}

// Run follows the connection until ctx ends, connecting again after the
// Backoff's wait whenever there is none. It must be called after Start
// returned, from one goroutine. The connection in use when ctx ends is
// left open: its owner closes it.
func (s *Supervisor[C]) Run(ctx context.Context) {
	b := s.Backoff
	for ctx.Err() == nil {
		if !s.up {
			if !sleep(ctx, s.wait) {
				return
			}
			s.connect(ctx, false, b)
			continue
		}
		if !s.follow(ctx, b) {
			return
		}
	}
}

// connect makes one connection and takes it into use.
func (s *Supervisor[C]) connect(ctx context.Context, first bool, b Backoff) {
	c, err := s.Connect(ctx)
	if err != nil {
		s.failed(err, first, b)
		return
	}
	if err := s.Ready(ctx, c, first); err != nil {
		c.Close()
		s.failed(err, first, b)
		return
	}
	s.cur, s.up = c, true
}

// failed counts one more failure in a row and tells the owner when the
// next try is.
func (s *Supervisor[C]) failed(err error, first bool, b Backoff) {
	s.fails++
	jitter := s.jitter
	if jitter == nil {
		jitter = Jitter
	}
	s.wait = jitter(b.After(s.fails))
	s.Failed(Failure{Err: err, First: first, InARow: s.fails, RetryIn: s.wait})
}

// follow follows the connection in use until it ends or can no longer be
// used, passing on list-changed notices no faster than the Backoff lets
// it. It reports false when ctx ended first.
func (s *Supervisor[C]) follow(ctx context.Context, b Backoff) bool {
	c := s.cur
	began := time.Now()
	down := func(err error) {
		var none C
		s.cur, s.up = none, false
		if time.Since(began) >= b.Max {
			s.fails = 0 // it ran long enough: a new series of waits
		}
		s.failed(err, false, b)
	}
	var due <-chan time.Time // a listing a notice asked for waits for its gap
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return false
		case <-c.Done():
			s.Ended(ctx, c)
			down(c.Err())
			return true
		case <-c.ListChanged():
			if due != nil {
				continue // the listing due answers this notice too
			}
			wait := time.Duration(0)
			if !s.asked.IsZero() {
				wait = time.Until(s.asked.Add(s.gap))
			}
			timer = time.NewTimer(max(wait, 0))
			due = timer.C
		case <-due:
			due = nil
			now := time.Now()
			if s.asked.IsZero() || now.Sub(s.asked) >= b.Max {
				s.gap = b.Relist // quiet for a while: a new series of gaps
			} else {
				s.gap = min(2*s.gap, b.Max)
			}
			s.asked = now
			if err := s.Changed(ctx, c); err != nil {
				if ctx.Err() != nil {
					return false
				}
				c.Close()
				down(err)
				return true
			}
		}
	}
}

// sleep waits d, or reports false when ctx ends first.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
