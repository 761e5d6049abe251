package upstream

import (
	"bytes"
	"errors"
	"fmt"
	"io"
)

// readEvents reads a text/event-stream and calls fn with each event's type
// ("" when unnamed) and data, until the stream ends (nil), breaks (the
// error) or fn returns false (nil). No line and no event's data may exceed
// max bytes.
func readEvents(r io.Reader, max int, fn func(typ string, data []byte) bool) error {
	lr := NewLineReader(r, max)
	var typ string
	var data []byte
	has := false
	for {
		line, err := lr.ReadLine()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil // an event the stream cut short is dropped
			}
			return err
		}
		if len(line) == 0 {
			if has && !fn(typ, data) {
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
