package ledger

import (
	"context"
	"fmt"
	"time"
)

// Watch reports on the returned channel whenever the ledger file changed
// since the last look: a commit by another process, or by this process's
// writer. It polls PRAGMA data_version every interval on a connection of its
// own; notices are coalesced (the channel holds one). The channel is closed
// when ctx ends.
func (l *Ledger) Watch(ctx context.Context, every time.Duration) (<-chan struct{}, error) {
	conn, err := l.rdb.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("ledger: watch: %w", err)
	}
	var last int64
	if err := conn.QueryRowContext(ctx, "PRAGMA data_version").Scan(&last); err != nil {
		conn.Close()
		return nil, fmt.Errorf("ledger: watch: %w", err)
	}
	ch := make(chan struct{}, 1)
	go func() {
		defer close(ch)
		defer conn.Close()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			var v int64
			if err := conn.QueryRowContext(ctx, "PRAGMA data_version").Scan(&v); err != nil {
				if ctx.Err() != nil {
					return
				}
				continue
			}
			if v != last {
				last = v
				select {
				case ch <- struct{}{}:
				default:
				}
			}
		}
	}()
	return ch, nil
}
