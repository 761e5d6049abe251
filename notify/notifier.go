package notify

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// queueLen bounds the notes waiting to be sent: beyond it, a note is
// dropped (and counted), never waited for.
const queueLen = 16

// sendTimeout bounds one notification's delivery, connecting included.
const sendTimeout = 5 * time.Second

// closeWait bounds how long Close lets queued notes go out.
const closeWait = 2 * time.Second

// sender delivers one note; the D-Bus and osascript senders are the two.
type sender interface {
	// send delivers n within ctx. It is called from one goroutine.
	send(ctx context.Context, n note) error
	// close releases what send holds (a bus connection).
	close()
	// String names the method in the operator's log.
	String() string
}

// Stats counts what a Notifier did.
type Stats struct {
	Sent, Failed, Dropped uint64
}

// Notifier sends one desktop notification per waiting request, from its
// own goroutine. Its methods are safe for concurrent use.
type Notifier struct {
	to    sender
	log   *slog.Logger
	queue chan note

	ctx    context.Context // the sender's life; cancelled by Close
	cancel context.CancelFunc
	done   chan struct{} // closed when the sending goroutine ended

	mu     sync.Mutex // guards queue's close against Waiting's send
	closed bool

	sent, failed, dropped  atomic.Uint64
	failLogged, dropLogged atomic.Bool
}

func newNotifier(to sender, log *slog.Logger) *Notifier {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	n := &Notifier{to: to, log: log, queue: make(chan note, queueLen), ctx: ctx, cancel: cancel, done: make(chan struct{})}
	go n.run()
	return n
}

// Waiting queues the notification that w waits for the operator and
// returns at once: when the queue is full the note is dropped. It does
// nothing on a nil Notifier or after Close.
func (n *Notifier) Waiting(w Waiting) {
	if n == nil {
		return
	}
	nt := text(w)
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return
	}
	full := false
	select {
	case n.queue <- nt:
	default:
		full = true
	}
	n.mu.Unlock()
	if !full {
		return
	}
	n.dropped.Add(1)
	if n.dropLogged.CompareAndSwap(false, true) {
		n.log.Warn("desktop notification dropped: too many waiting to be sent (further drops are not logged)",
			"approval", w.Approval, "queue", queueLen)
	}
}

// Stats reports what n sent, failed to send and dropped so far.
func (n *Notifier) Stats() Stats {
	return Stats{Sent: n.sent.Load(), Failed: n.failed.Load(), Dropped: n.dropped.Load()}
}

// Close lets the notes already queued go out for a moment (at most
// closeWait), then stops the sender and releases its connection. When
// some were not delivered, it logs how many, once.
func (n *Notifier) Close() {
	if n == nil {
		return
	}
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return
	}
	n.closed = true
	close(n.queue)
	n.mu.Unlock()
	t := time.AfterFunc(closeWait, n.cancel)
	<-n.done
	t.Stop()
	n.cancel()
	n.to.close()
	if st := n.Stats(); st.Failed+st.Dropped > 0 {
		n.log.Warn("desktop notifications not all delivered", "sent", st.Sent, "not_sent", st.Failed, "dropped", st.Dropped)
	}
}

func (n *Notifier) run() {
	defer close(n.done)
	for nt := range n.queue {
		if n.ctx.Err() != nil {
			n.dropped.Add(1)
			continue
		}
		ctx, cancel := context.WithTimeout(n.ctx, sendTimeout)
		err := n.to.send(ctx, nt)
		cancel()
		if err == nil {
			n.sent.Add(1)
			continue
		}
		n.failed.Add(1)
		if errors.Is(err, context.Canceled) && n.ctx.Err() != nil {
			continue // closing: not a failure to report
		}
		if n.failLogged.CompareAndSwap(false, true) {
			n.log.Warn("desktop notification not sent; requests still wait for `mcp-guard approvals` or `watch` (further failures are not logged)",
				"via", n.to.String(), "err", err)
		}
	}
}
