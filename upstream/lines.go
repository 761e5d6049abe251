package upstream

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// ErrLineTooLong is returned by a LineReader when a peer sends a message line
// longer than the configured cap. The connection it came from is unusable.
var ErrLineTooLong = errors.New("message line exceeds the size limit")

// LineReader reads newline-delimited messages and refuses any line longer
// than max bytes without buffering more than max bytes of it. The proxy's
// stdio host reads its host with it too.
type LineReader struct {
	r   *bufio.Reader
	max int
}

// NewLineReader reads r with lines capped at max bytes.
func NewLineReader(r io.Reader, max int) *LineReader {
	return &LineReader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// ReadLine returns the next line without its trailing "\n" or "\r\n". The
// returned slice is owned by the caller.
func (lr *LineReader) ReadLine() ([]byte, error) {
	var line []byte
	for {
		frag, err := lr.r.ReadSlice('\n')
		if len(line)+len(frag) > lr.max+2 { // +2: the terminator does not count
			return nil, fmt.Errorf("%w (%d bytes)", ErrLineTooLong, lr.max)
		}
		line = append(line, frag...)
		if err == nil {
			break
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if errors.Is(err, io.EOF) && len(line) > 0 {
			break // a last line without a newline still counts
		}
		return nil, err
	}
	n := len(line)
	if n > 0 && line[n-1] == '\n' {
		n--
	}
	if n > 0 && line[n-1] == '\r' {
		n--
	}
	if n > lr.max {
		return nil, fmt.Errorf("%w (%d bytes)", ErrLineTooLong, lr.max)
	}
	return line[:n], nil
}
