package proxy

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// ErrLineTooLong is returned by a lineReader when a peer sends a message line
// longer than the configured cap. The connection it came from is unusable.
var ErrLineTooLong = errors.New("message line exceeds the size limit")

// lineReader reads newline-delimited messages and refuses any line longer
// than max bytes without buffering more than max bytes of it.
type lineReader struct {
	r   *bufio.Reader
	max int
}

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// ReadLine returns the next line without its trailing "\n" or "\r\n". The
// returned slice is owned by the caller.
func (lr *lineReader) ReadLine() ([]byte, error) {
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

// limitedLineReader adapts a lineReader to io.Reader for consumers that do
// their own line splitting (mcp-go's stdio server): it hands out whole lines
// and fails the stream the moment a line is over the cap.
type limitedLineReader struct {
	lr  *lineReader
	buf []byte
	err error
}

// NewLimitedLineReader returns an io.Reader over r that yields r's content
// line by line and returns an error instead of any line longer than max.
func NewLimitedLineReader(r io.Reader, max int) io.Reader {
	return &limitedLineReader{lr: newLineReader(r, max)}
}

func (l *limitedLineReader) Read(p []byte) (int, error) {
	for len(l.buf) == 0 {
		if l.err != nil {
			return 0, l.err
		}
		line, err := l.lr.ReadLine()
		if err != nil {
			l.err = err
			continue
		}
		l.buf = append(line, '\n')
	}
	n := copy(p, l.buf)
	l.buf = l.buf[n:]
	return n, nil
}
