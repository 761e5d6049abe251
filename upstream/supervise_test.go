package upstream

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mcp-guard/mcp-guard/config"
)

// fakeConn is a connection whose end and list-changed notices the test
// drives. The Supervisor is table-tested on it in a synctest bubble, where
// its backoff waits take no real time; the real connections (stdio
// children, HTTP) are in the e2e restart tests.
type fakeConn struct {
	id      int
	done    chan struct{}
	changed chan struct{}
	closed  bool
}

func (c *fakeConn) Done() <-chan struct{}        { return c.done }
func (c *fakeConn) Err() error                   { return errors.New("gone") }
func (c *fakeConn) ListChanged() <-chan struct{} { return c.changed }
func (c *fakeConn) Close()                       { c.closed = true }

// superviseLog is what a Supervisor told its owner, with the bubble's
// clock (seconds since the test began).
type superviseLog struct {
	mu      sync.Mutex
	began   time.Time
	events  []string
	conns   []*fakeConn
	connErr []error // Connect's results in turn (nil: a connection)
	ready   []error // Ready's results in turn (default nil)
	changed []error // Changed's results in turn (default nil)
	backoff Backoff // zero: the default limits'
}

func (l *superviseLog) add(format string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, time.Since(l.began).String()+" "+format)
}

func (l *superviseLog) supervisor() *Supervisor[*fakeConn] {
	b := l.backoff
	if b == (Backoff{}) {
		b = BackoffOf(config.DefaultLimits())
	}
	return &Supervisor[*fakeConn]{
		Backoff: b,
		jitter:  func(d time.Duration) time.Duration { return d },
		Connect: func(context.Context) (*fakeConn, error) {
			l.mu.Lock()
			var err error
			if len(l.connErr) > 0 {
				err, l.connErr = l.connErr[0], l.connErr[1:]
			}
			l.mu.Unlock()
			if err != nil {
				return nil, err
			}
			c := &fakeConn{done: make(chan struct{}), changed: make(chan struct{}, 1)}
			l.mu.Lock()
			c.id = len(l.conns)
			l.conns = append(l.conns, c)
			l.mu.Unlock()
			return c, nil
		},
		Ready: func(_ context.Context, c *fakeConn, first bool) error {
			l.mu.Lock()
			var err error
			if len(l.ready) > 0 {
				err, l.ready = l.ready[0], l.ready[1:]
			}
			l.mu.Unlock()
			if err != nil {
				l.add("unready " + itoa(c.id))
				return err
			}
			if first {
				l.add("ready first " + itoa(c.id))
			} else {
				l.add("ready " + itoa(c.id))
			}
			return nil
		},
		Failed: func(f Failure) {
			l.add("failed " + itoa(f.InARow) + " retry in " + f.RetryIn.String())
		},
		Ended: func(_ context.Context, c *fakeConn) { l.add("ended " + itoa(c.id)) },
		Changed: func(_ context.Context, c *fakeConn) error {
			l.mu.Lock()
			var err error
			if len(l.changed) > 0 {
				err, l.changed = l.changed[0], l.changed[1:]
			}
			l.mu.Unlock()
			if err != nil {
				l.add("unlisted " + itoa(c.id))
				return err
			}
			l.add("changed " + itoa(c.id))
			return nil
		},
	}
}

func itoa(i int) string { return string(rune('0' + i)) }

func (l *superviseLog) conn(i int) *fakeConn {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.conns[i]
}

// run starts s in the bubble, lets script drive it, then stops it and
// returns what the owner was told.
func (l *superviseLog) run(t *testing.T, script func()) []string {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	s := l.supervisor()
	l.began = time.Now()
	s.Start(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.Run(ctx)
	}()
	script()
	cancel()
	<-done
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.events)
}

func TestSupervisor_StartsAgainWithBackoff(t *testing.T) {
	down := errors.New("down")
	tests := []struct {
		name    string
		connErr []error
		ready   []error
		changed []error
		backoff Backoff
		script  func(l *superviseLog)
		want    []string
	}{
		{
			name:    "first start fails: retried after 1s, 2s, 4s",
			connErr: []error{down, down, down},
			script:  func(*superviseLog) { time.Sleep(10 * time.Second) },
			want: []string{"0s failed 1 retry in 1s", "1s failed 2 retry in 2s", "3s failed 3 retry in 4s",
				"7s ready 0"},
		},
		{
			name:   "an ended connection is started again after 1s",
			script: func(l *superviseLog) { time.Sleep(5 * time.Second); close(l.conn(0).done); time.Sleep(2 * time.Second) },
			want:   []string{"0s ready first 0", "5s ended 0", "5s failed 1 retry in 1s", "6s ready 1"},
		},
		{
			name: "a server that keeps ending waits longer each time; one that ran a minute starts over at 1s",
			script: func(l *superviseLog) {
				time.Sleep(5 * time.Second)
				close(l.conn(0).done) // ran 5s: next wait 1s
				time.Sleep(10 * time.Second)
				close(l.conn(1).done) // ran 9s: next wait 2s
				time.Sleep(10 * time.Second)
				close(l.conn(2).done) // ran 8s: next wait 4s
				time.Sleep(2 * time.Minute)
				close(l.conn(3).done) // ran over a minute: next wait 1s
				time.Sleep(5 * time.Second)
			},
			want: []string{"0s ready first 0", "5s ended 0", "5s failed 1 retry in 1s", "6s ready 1",
				"15s ended 1", "15s failed 2 retry in 2s", "17s ready 2", "25s ended 2", "25s failed 3 retry in 4s",
				"29s ready 3", "2m25s ended 3", "2m25s failed 1 retry in 1s", "2m26s ready 4"},
		},
		{
			name:   "a connection that cannot be listed is closed and tried again",
			ready:  []error{down, down},
			script: func(*superviseLog) { time.Sleep(5 * time.Second) },
			want: []string{"0s unready 0", "0s failed 1 retry in 1s", "1s unready 1", "1s failed 2 retry in 2s",
				"3s ready 2"},
		},
		{
			name:   "a server that can never be listed is tried less and less often, at most once a minute",
			ready:  slices.Repeat([]error{down}, 9),
			script: func(*superviseLog) { time.Sleep(4 * time.Minute) },
			want: []string{"0s unready 0", "0s failed 1 retry in 1s", "1s unready 1", "1s failed 2 retry in 2s",
				"3s unready 2", "3s failed 3 retry in 4s", "7s unready 3", "7s failed 4 retry in 8s",
				"15s unready 4", "15s failed 5 retry in 16s", "31s unready 5", "31s failed 6 retry in 32s",
				"1m3s unready 6", "1m3s failed 7 retry in 1m0s", "2m3s unready 7", "2m3s failed 8 retry in 1m0s",
				"3m3s unready 8", "3m3s failed 9 retry in 1m0s"},
		},
		{
			name:    "the waits are the config's",
			ready:   []error{down, down, down, down},
			backoff: Backoff{Min: 100 * time.Millisecond, Max: 300 * time.Millisecond, Relist: 300 * time.Millisecond},
			script:  func(*superviseLog) { time.Sleep(time.Second) },
			want: []string{"0s unready 0", "0s failed 1 retry in 100ms", "100ms unready 1", "100ms failed 2 retry in 200ms",
				"300ms unready 2", "300ms failed 3 retry in 300ms", "600ms unready 3", "600ms failed 4 retry in 300ms",
				"900ms ready 4"},
		},
		{
			name: "list-changed notices: one listing at once, the next after 1s, then 2s, 4s: a storm is answered less and less often",
			script: func(l *superviseLog) {
				for range 500 { // one a 20ms for 10s
					select {
					case l.conn(0).changed <- struct{}{}:
					default:
					}
					time.Sleep(20 * time.Millisecond)
				}
				time.Sleep(10 * time.Second)
			},
			want: []string{"0s ready first 0", "0s changed 0", "1s changed 0", "3s changed 0", "7s changed 0",
				"15s changed 0"},
		},
		{
			name: "a notice after a quiet minute is answered at once; the next after 1s again",
			script: func(l *superviseLog) {
				notice := func() { l.conn(0).changed <- struct{}{}; time.Sleep(10 * time.Millisecond) }
				notice()
				notice()
				time.Sleep(2 * time.Second)
				notice() // 2s after the last listing at 1s: its gap was 2s
				time.Sleep(2 * time.Minute)
				notice()
				notice()
				time.Sleep(2 * time.Second)
			},
			want: []string{"0s ready first 0", "0s changed 0", "1s changed 0", "3s changed 0",
				"2m2.03s changed 0", "2m3.03s changed 0"},
		},
		{
			name:    "a listing a notice asked for that fails closes the connection; the next try waits",
			changed: []error{down, down},
			script: func(l *superviseLog) {
				l.conn(0).changed <- struct{}{}
				time.Sleep(2 * time.Second)
				l.conn(1).changed <- struct{}{} // within the gap of the last listing: at 1s
				time.Sleep(5 * time.Second)
			},
			want: []string{"0s ready first 0", "0s unlisted 0", "0s failed 1 retry in 1s", "1s ready 1",
				"2s unlisted 1", "2s failed 2 retry in 2s", "4s ready 2"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := &superviseLog{connErr: tt.connErr, ready: tt.ready, changed: tt.changed, backoff: tt.backoff}
				got := l.run(t, func() { tt.script(l) })
				if !slices.Equal(got, tt.want) {
					t.Errorf("the owner was told\n%q\nwant\n%q", got, tt.want)
				}
				refused := 0
				for _, e := range got {
					if strings.Contains(e, "unready") || strings.Contains(e, "unlisted") {
						refused++
					}
				}
				closed := 0
				for _, c := range l.conns {
					if c.closed {
						closed++
					}
				}
				if closed != refused {
					t.Errorf("%d connections closed, %d refused; the Supervisor closes only a connection Ready or Changed refused (its owner closes the rest)", closed, refused)
				}
			})
		})
	}
}

func TestBackoffOf_ReadsTheLimits(t *testing.T) {
	with := func(wait, waitMax, relist time.Duration) config.Limits {
		l := config.DefaultLimits()
		l.RetryWait, l.RetryWaitMax, l.RelistInterval = wait, waitMax, relist
		return l
	}
	tests := []struct {
		in   config.Limits
		want Backoff
	}{
		{config.DefaultLimits(), Backoff{Min: time.Second, Max: time.Minute, Relist: time.Second}},
		{with(2*time.Minute, time.Second, time.Second), Backoff{Min: 2 * time.Minute, Max: 2 * time.Minute, Relist: time.Second}},
		{with(10*time.Millisecond, 20*time.Millisecond, time.Second), Backoff{Min: 10 * time.Millisecond, Max: 20 * time.Millisecond, Relist: 20 * time.Millisecond}},
	}
	for _, tt := range tests {
		if got := BackoffOf(tt.in); got != tt.want {
			t.Errorf("BackoffOf(retry_wait %s, retry_wait_max %s, relist_interval %s) = %+v; want %+v", tt.in.RetryWait, tt.in.RetryWaitMax, tt.in.RelistInterval, got, tt.want)
		}
	}
	b := BackoffOf(config.DefaultLimits())
	for n, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 6: 32 * time.Second, 7: time.Minute, 1000: time.Minute} {
		if got := b.After(n); got != want {
			t.Errorf("After(%d) = %s; want %s", n, got, want)
		}
	}
}

func TestJitter_TakesUpToAQuarter(t *testing.T) {
	d := 8 * time.Second
	lowest, highest := d, time.Duration(0)
	for range 2000 {
		j := Jitter(d)
		if j <= 3*d/4 || j > d {
			t.Fatalf("Jitter(%s) = %s; want in (%s, %s]", d, j, 3*d/4, d)
		}
		lowest, highest = min(lowest, j), max(highest, j)
	}
	if highest-lowest < d/8 {
		t.Errorf("Jitter(%s) spread only %s..%s over 2000 draws", d, lowest, highest)
	}
}

func TestSupervisor_StopsWithItsContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := &superviseLog{connErr: []error{errors.New("down")}}
		got := l.run(t, func() { time.Sleep(500 * time.Millisecond) }) // ends within the first backoff
		if len(l.conns) != 0 || len(got) != 1 {
			t.Fatalf("after its context ended the Supervisor connected %d times; it told its owner %q", len(l.conns), got)
		}
	})
}
