package upstream

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"
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
}

func (l *superviseLog) add(format string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, time.Since(l.began).String()+" "+format)
}

func (l *superviseLog) supervisor() *Supervisor[*fakeConn] {
	return &Supervisor[*fakeConn]{
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
		Failed: func(err error, first bool, retryIn time.Duration) {
			l.add("failed retry in " + retryIn.String())
		},
		Ended:   func(_ context.Context, c *fakeConn) { l.add("ended " + itoa(c.id)) },
		Changed: func(_ context.Context, c *fakeConn) { l.add("changed " + itoa(c.id)) },
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
		script  func(l *superviseLog)
		want    []string
	}{
		{
			name:    "first start fails: retried after 1s, 2s, 4s",
			connErr: []error{down, down, down},
			script:  func(*superviseLog) { time.Sleep(10 * time.Second) },
			want: []string{"0s failed retry in 1s", "1s failed retry in 2s", "3s failed retry in 4s",
				"7s ready 0"},
		},
		{
			name:   "an ended connection is started again after 1s",
			script: func(l *superviseLog) { time.Sleep(5 * time.Second); close(l.conn(0).done); time.Sleep(2 * time.Second) },
			want:   []string{"0s ready first 0", "5s ended 0", "6s ready 1"},
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
			want: []string{"0s ready first 0", "5s ended 0", "6s ready 1", "15s ended 1", "17s ready 2",
				"25s ended 2", "29s ready 3", "2m25s ended 3", "2m26s ready 4"},
		},
		{
			name:   "a connection that cannot be listed is closed and tried again",
			ready:  []error{down, down},
			script: func(*superviseLog) { time.Sleep(5 * time.Second) },
			want:   []string{"0s unready 0", "1s unready 1", "3s ready 2"},
		},
		{
			name: "list-changed notices are passed on at most once per 200ms",
			script: func(l *superviseLog) {
				for range 50 { // one a 20ms for a second
					select {
					case l.conn(0).changed <- struct{}{}:
					default:
					}
					time.Sleep(20 * time.Millisecond)
				}
				time.Sleep(time.Second)
			},
			want: []string{"0s ready first 0", "0s changed 0", "200ms changed 0", "400ms changed 0",
				"600ms changed 0", "800ms changed 0", "1s changed 0"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				l := &superviseLog{connErr: tt.connErr, ready: tt.ready}
				got := l.run(t, func() { tt.script(l) })
				if !slices.Equal(got, tt.want) {
					t.Errorf("the owner was told\n%q\nwant\n%q", got, tt.want)
				}
				for i, c := range l.conns {
					unready := i < len(tt.ready) && tt.ready[i] != nil
					if c.closed != unready {
						t.Errorf("connection %d closed = %v; the Supervisor closes only a connection Ready refused (its owner closes the rest)", i, c.closed)
					}
				}
			})
		})
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
