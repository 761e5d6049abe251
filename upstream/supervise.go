package upstream

import (
	"context"
	"time"
)

// Conn is what a Supervisor follows of one connection: a *Client, or a
// type that embeds one.
type Conn interface {
	Done() <-chan struct{}        // closed when the connection has ended
	ListChanged() <-chan struct{} // the server said its lists changed
	Close()
}

// Backoff paces a Supervisor. Zero fields take the defaults in brackets.
type Backoff struct {
	Min    time.Duration // the first wait before starting again [1s]; it doubles while starts fail
	Max    time.Duration // the longest wait [1m]
	Stable time.Duration // a connection that ran this long is started again after Min [1m]
	Relist time.Duration // list-changed notices are acted on at most once per Relist [200ms]
}

func (b Backoff) withDefaults() Backoff {
	if b.Min <= 0 {
		b.Min = time.Second
	}
	if b.Max <= 0 {
		b.Max = time.Minute
	}
	if b.Stable <= 0 {
		b.Stable = time.Minute
	}
	if b.Relist <= 0 {
		b.Relist = 200 * time.Millisecond
	}
	return b
}

// Supervisor keeps one upstream connected for as long as its context
// lasts: Start makes the first connection, Run follows it and, when it
// ends (a crash, a lost HTTP session) or never came up, connects again
// with backoff. What a connection means to its owner (listing its tools,
// checking pins, showing them to the host, withdrawing them) is the
// owner's, through the functions it sets; every one is required.
type Supervisor[C Conn] struct {
	Backoff Backoff
	// Connect starts (or dials) the upstream and initializes it.
	Connect func(ctx context.Context) (C, error)
	// Ready takes a new connection into use (first: at Start); an error
	// means it is not usable: the Supervisor closes it and tries again.
	Ready func(ctx context.Context, c C, first bool) error
	// Failed is told that Connect failed, and when the next try is.
	Failed func(err error, first bool, retryIn time.Duration)
	// Ended is told that a connection in use ended on its own.
	Ended func(ctx context.Context, c C)
	// Changed is told that the server said its lists changed.
	Changed func(ctx context.Context, c C)

	cur C    // the connection in use, when up
	up  bool // cur is set
}

// Start makes the first connection and returns when it is in use or has
// failed (then Run tries again).
func (s *Supervisor[C]) Start(ctx context.Context) {
	s.connect(ctx, true, s.Backoff.withDefaults().Min)
}

// Run follows the connection until ctx ends, connecting again with
// backoff whenever there is none. It must be called after Start returned,
// from one goroutine. The connection in use when ctx ends is left open:
// its owner closes it.
func (s *Supervisor[C]) Run(ctx context.Context) {
	b := s.Backoff.withDefaults()
	delay := b.Min
	for ctx.Err() == nil {
		if !s.up {
			if !sleep(ctx, delay) {
				return
			}
			delay = min(2*delay, b.Max)
			s.connect(ctx, false, delay)
			continue
		}
		began := time.Now()
		if !s.follow(ctx, b.Relist) {
			return
		}
		if time.Since(began) >= b.Stable {
			delay = b.Min
		}
	}
}

// connect makes one connection and takes it into use.
func (s *Supervisor[C]) connect(ctx context.Context, first bool, retryIn time.Duration) {
	c, err := s.Connect(ctx)
	if err != nil {
		s.Failed(err, first, retryIn)
		return
	}
	if err := s.Ready(ctx, c, first); err != nil {
		c.Close()
		return
	}
	s.cur, s.up = c, true
}

// follow waits for the connection in use to end, passing on list-changed
// notices (at most one per relist). It reports false when ctx ended first.
func (s *Supervisor[C]) follow(ctx context.Context, relist time.Duration) bool {
	c := s.cur
	for {
		select {
		case <-ctx.Done():
			return false
		case <-c.Done():
			var none C
			s.cur, s.up = none, false
			s.Ended(ctx, c)
			return true
		case <-c.ListChanged():
			s.Changed(ctx, c)
			if !sleep(ctx, relist) {
				return false
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
