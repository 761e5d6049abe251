package ledger

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"
)

// sockWitness is a datagram socket owned by a system logger: the journal's
// or syslog's. It connects on first use and again after a failure (the
// logger may have restarted).
type sockWitness struct {
	name string
	path string
	mu   sync.Mutex
	conn *net.UnixConn
}

func (w *sockWitness) Name() string { return w.name }

// connectLocked dials the socket if not connected. w.mu is held.
func (w *sockWitness) connectLocked() error {
	if w.conn != nil {
		return nil
	}
	c, err := net.DialUnix("unixgram", nil, &net.UnixAddr{Name: w.path, Net: "unixgram"})
	if err != nil {
		return fmt.Errorf("witness %s: connect %s: %w", w.name, w.path, err)
	}
	w.conn = c
	return nil
}

func (w *sockWitness) Probe(ctx context.Context) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.connectLocked()
}

// send writes one datagram, reconnecting once if the connected socket
// went away.
func (w *sockWitness) send(ctx context.Context, b []byte) error {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	deadline, _ := ctx.Deadline()
	w.mu.Lock()
	defer w.mu.Unlock()
	var err error
	for attempt := 0; attempt < 2; attempt++ {
		if err = w.connectLocked(); err != nil {
			return err
		}
		_ = w.conn.SetWriteDeadline(deadline)
		if _, err = w.conn.Write(b); err == nil {
			return nil
		}
		w.conn.Close()
		w.conn = nil
		if ctx.Err() != nil || time.Now().After(deadline) {
			break
		}
	}
	return fmt.Errorf("witness %s: send to %s: %w", w.name, w.path, err)
}

func (w *sockWitness) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.conn == nil {
		return nil
	}
	err := w.conn.Close()
	w.conn = nil
	return err
}
