package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime/trace"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// conn is the client end of a JSON-RPC connection. Requests carry string IDs
// ("g-1", "g-2", ...) so they can never be confused with the numeric IDs a
// server uses for its own requests; params and results are passed through as
// raw bytes. How a message travels is the transport's business: send puts
// one message on the wire, and the transport hands every message it receives
// to handle.
type conn struct {
	name string
	log  *slog.Logger
	// send transmits one encoded message. id is the request's ID, "" for
	// notifications and replies. A transport that answers asynchronously
	// reports a failed request later with fail(id, err).
	send func(msg []byte, id string) error

	seq atomic.Uint64

	mu      sync.Mutex
	pending map[string]chan *message
	err     error // why the connection ended; set once
	done    chan struct{}

	// Handlers run on the transport's reader and must not block.
	onNotify  func(method string, params json.RawMessage)
	onRequest func(id json.RawMessage, method string, params json.RawMessage)
}

func newConn(name string, send func(msg []byte, id string) error, log *slog.Logger) *conn {
	return &conn{
		name:    name,
		send:    send,
		log:     log,
		pending: make(map[string]chan *message),
		done:    make(chan struct{}),
	}
}

// readLines reads newline-delimited messages from r until it ends or breaks,
// then fails every pending call with the reason. It returns that reason.
func (c *conn) readLines(r io.Reader, maxLine int) error {
	lr := NewLineReader(r, maxLine)
	for {
		line, err := lr.ReadLine()
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = ErrClosed
			}
			c.close(err)
			return err
		}
		trace.Log(context.Background(), TraceStage, "upstream line read")
		c.handle(line)
	}
}

// handle dispatches one received message.
func (c *conn) handle(line []byte) {
	if len(line) == 0 {
		return
	}
	m, err := readMessage(line)
	if err != nil {
		c.log.Warn("upstream sent a message that is not JSON-RPC; ignored", "server", c.name, "err", err, "bytes", len(line))
		return
	}
	switch {
	case m.isNotification():
		if c.onNotify != nil {
			c.onNotify(m.Method, m.Params)
		}
	case m.isRequest():
		if c.onRequest != nil {
			c.onRequest(m.ID, m.Method, m.Params)
		} else {
			c.write(encodeError(m.ID, codeMethodNotFound, "method not found"), "")
		}
	default:
		c.deliver(&m)
	}
}

// waiting reports whether request id still waits for its answer.
func (c *conn) waiting(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.pending[id]
	return ok
}

// fail ends one pending request with err: its transport could not deliver
// it or its answer. It does nothing once the request was answered.
func (c *conn) fail(id string, err error) {
	c.mu.Lock()
	ch, ok := c.pending[id]
	delete(c.pending, id)
	c.mu.Unlock()
	if ok {
		ch <- &message{err: err}
	}
}

func (c *conn) deliver(m *message) {
	var id string
	if err := json.Unmarshal(m.ID, &id); err != nil {
		c.log.Warn("upstream sent a response to an ID mcp-guard never used; ignored", "server", c.name, "id", string(m.ID))
		return
	}
	c.mu.Lock()
	ch, ok := c.pending[id]
	delete(c.pending, id)
	c.mu.Unlock()
	if !ok {
		c.log.Warn("upstream sent a response to an unknown or finished request; ignored", "server", c.name, "id", id)
		return
	}
	ch <- m
}

// close ends the connection once, failing every pending call with err.
func (c *conn) close(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return
	}
	c.err = err
	close(c.done)
	for id, ch := range c.pending {
		delete(c.pending, id)
		close(ch)
	}
}

// Err reports why the connection ended, or nil while it is open.
func (c *conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func (c *conn) write(b []byte, id string) error {
	if err := c.send(b, id); err != nil {
		return fmt.Errorf("send to %s: %w", c.name, err)
	}
	return nil
}

// Call sends a request with params exactly as given and waits for its
// response. When ctx ends first, it tells the peer with
// notifications/cancelled and returns ctx's error; a late response is dropped.
func (c *conn) Call(ctx context.Context, method string, params json.RawMessage) (json.RawMessage, error) {
	return c.CallLate(ctx, method, params, 0, nil)
}

// CallLate is Call, except that when ctx is cancelled it keeps listening for
// the peer's answer for up to wait and hands it to late (from another
// goroutine): what the peer did is still known after the caller gave up.
func (c *conn) CallLate(ctx context.Context, method string, params json.RawMessage, wait time.Duration, late func(json.RawMessage, error)) (json.RawMessage, error) {
	id := "g-" + strconv.FormatUint(c.seq.Add(1), 10)
	ch := make(chan *message, 1)
	c.mu.Lock()
	if c.err != nil {
		err := c.err
		c.mu.Unlock()
		return nil, err
	}
	c.pending[id] = ch
	c.mu.Unlock()

	if err := c.write(encodeRequest(id, method, params), id); err != nil {
		c.forget(id)
		return nil, err
	}
	trace.Log(ctx, TraceStage, "sent upstream")
	select {
	case m, ok := <-ch:
		return c.answer(method, m, ok)
	case <-ctx.Done():
		if err := c.write(encodeNotification("notifications/cancelled", cancelParams(ctx, id)), ""); err != nil {
			c.log.Warn("could not send notifications/cancelled", "server", c.name, "err", err)
		}
		if late == nil || wait <= 0 {
			c.forget(id)
			return nil, ctx.Err()
		}
		go func() {
			t := time.NewTimer(wait)
			defer t.Stop()
			select {
			case m, ok := <-ch:
				late(c.answer(method, m, ok))
			case <-t.C:
				c.forget(id)
			}
		}()
		return nil, ctx.Err()
	}
}

// answer turns a delivered response (or a closed channel) into a result.
func (c *conn) answer(method string, m *message, ok bool) (json.RawMessage, error) {
	if !ok {
		return nil, c.Err()
	}
	if m.err != nil {
		return nil, m.err
	}
	if m.Error != nil {
		return nil, m.Error
	}
	if m.Result == nil {
		return nil, fmt.Errorf("%s: response to %s has neither result nor error", c.name, method)
	}
	return m.Result, nil
}

func (c *conn) forget(id string) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

// Notify sends a notification with params exactly as given.
func (c *conn) Notify(method string, params json.RawMessage) error {
	if err := c.Err(); err != nil {
		return err
	}
	return c.write(encodeNotification(method, params), "")
}

// Reply answers a request the peer sent.
func (c *conn) Reply(id json.RawMessage, result json.RawMessage) error {
	return c.write(encodeResult(id, result), "")
}

// ReplyError answers a request the peer sent with a JSON-RPC error.
func (c *conn) ReplyError(id json.RawMessage, code int, msg string) error {
	return c.write(encodeError(id, code, msg), "")
}
