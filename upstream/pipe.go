package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
)

// startPipe speaks to a server over the connection spec.Dial returns (a
// server embedded in this process, or a test's fake) as to a stdio child:
// one JSON-RPC message per line each way. Closing the Client closes the
// connection; the connection ending ends the Client.
func startPipe(ctx context.Context, spec Spec, opts Options) (*Client, error) {
	limits := boundsOf(opts.Limits)
	u := newClient(spec, opts)
	rwc, err := spec.Dial(ctx)
	if err == nil && rwc == nil {
		err = errors.New("no connection and no error")
	}
	if err != nil {
		return nil, fmt.Errorf("server %q: dial: %w", spec.Name, err)
	}
	u.started = StartInfo{Transport: "pipe"}
	var wmu sync.Mutex
	u.conn = newConn(spec.Name, func(b []byte, _ string) error {
		wmu.Lock()
		defer wmu.Unlock()
		_, err := rwc.Write(b)
		return err
	}, u.log)
	u.conn.onNotify = u.onNotify
	u.conn.onRequest = u.onRequest
	u.stop = func() { rwc.Close() }
	go u.readPipe(rwc)

	ictx, cancel := context.WithTimeout(ctx, limits.StartTimeout)
	defer cancel()
	if err := u.handshake(ictx, spec.Protocol); err != nil {
		u.Close()
		return nil, fmt.Errorf("server %q: %w", spec.Name, err)
	}
	return u, nil
}

// readPipe is the read loop of a piped server; when it ends, for whatever
// reason, the connection is closed and every caller learns why.
func (u *Client) readPipe(rwc io.ReadWriteCloser) {
	err := u.conn.readLines(rwc, u.limits.MessageBytes)
	rwc.Close()
	if errors.Is(err, ErrLineTooLong) {
		u.log.Error("upstream sent an oversized message; closed it", "limit_bytes", u.limits.MessageBytes)
		msg := fmt.Sprintf("upstream %q sent a message over %d bytes (limits.message_bytes) and was stopped", u.name, u.limits.MessageBytes)
		u.ended(&EndedError{Err: errors.New(msg), Host: msg})
		return
	}
	u.ended(&EndedError{
		Err:  fmt.Errorf("upstream %q closed its connection", u.name),
		Host: fmt.Sprintf("upstream %q closed its connection before it answered; mcp-guard starts it again", u.name),
	})
}
