package upstream

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"
)

// streamPos is what an event stream said about resuming it: the ID of the
// last event dispatched (sent back as Last-Event-ID) and the server's
// reconnection time. It carries over from one connection of a stream to
// the next.
type streamPos struct {
	lastID string        // "" until the server gives event IDs
	retry  time.Duration // 0 until the server sets one
}

// readEvents reads a text/event-stream and calls fn with each event's type
// ("" when unnamed) and data, until the stream ends (nil), breaks (the
// error) or fn returns false (nil). No line and no event's data may exceed
// max bytes. An event with no data is not passed on (a server primes a
// stream for resumption with one that has only an ID). pos, when not nil,
// follows the stream's event IDs and retry field as the SSE standard
// says.
func readEvents(r io.Reader, max int, pos *streamPos, fn func(typ string, data []byte) bool) error {
	if pos == nil {
		pos = &streamPos{}
	}
	lr := NewLineReader(r, max)
	var typ string
	var data []byte
	has := false
	id := pos.lastID // the last event ID buffer
	for {
		line, err := lr.ReadLine()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil // an event the stream cut short is dropped
			}
			return err
		}
		if len(line) == 0 {
			pos.lastID = id
			if has && len(data) > 0 && !fn(typ, data) {
				return nil
			}
			typ, data, has = "", nil, false
			continue
		}
		if line[0] == ':' {
			continue // a comment, often a keep-alive
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "event":
			typ = string(value)
		case "id":
			if bytes.IndexByte(value, 0) < 0 {
				id = string(value)
			}
		case "retry":
			if ms, err := strconv.ParseUint(string(value), 10, 31); err == nil {
				pos.retry = time.Duration(ms) * time.Millisecond
			}
		case "data":
			if has {
				data = append(data, '\n')
			}
			data = append(data, value...)
			has = true
			if len(data) > max {
				return fmt.Errorf("%w (%d bytes)", ErrLineTooLong, max)
			}
		}
	}
}
