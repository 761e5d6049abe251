package safetext

import (
	"fmt"
	"io"
	"sync"
	"unicode/utf8"
)

// Writer is the one printer every command's output to the operator passes
// through: it escapes, on the way out, every character Suspicious names (C0
// and C1 controls but newline, DEL, bidi controls, zero-width and tag
// characters, combining marks...) as \u{XXXX} (a tab as \t), and every byte
// that is not UTF-8 as \x{XX}. Plain text, and text already escaped with
// Escape, passes unchanged, so no host- or server-chosen text can reach the
// terminal raw, whichever code path printed it. Writes may split a UTF-8
// sequence: its bytes wait for the next write (or Flush). It is safe for
// concurrent use.
type Writer struct {
	mu   sync.Mutex
	w    io.Writer
	tail []byte // the start of a UTF-8 sequence the last write ended in
	buf  []byte
}

// NewWriter returns a Writer printing to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write escapes p and writes it; it reports len(p) on success.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	in := p
	if len(w.tail) > 0 {
		in = append(w.tail, p...)
		w.tail = nil
	}
	// Keep an incomplete sequence at the very end for the next write.
	if cut := incompleteTail(in); cut < len(in) {
		w.tail = append([]byte(nil), in[cut:]...)
		in = in[:cut]
	}
	w.buf = appendEscaped(w.buf[:0], in)
	if _, err := w.w.Write(w.buf); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes a UTF-8 sequence left incomplete by the last write, escaped
// as the invalid bytes it is.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.tail) == 0 {
		return nil
	}
	w.buf = appendEscaped(w.buf[:0], w.tail)
	w.tail = nil
	_, err := w.w.Write(w.buf)
	return err
}

// incompleteTail returns where a UTF-8 sequence that p ends in before it is
// complete starts, or len(p).
func incompleteTail(p []byte) int {
	for i := len(p) - 1; i >= 0 && i >= len(p)-utf8.UTFMax+1; i-- {
		if utf8.RuneStart(p[i]) {
			if !utf8.FullRune(p[i:]) {
				return i
			}
			break
		}
	}
	return len(p)
}

func appendEscaped(out, p []byte) []byte {
	for i := 0; i < len(p); {
		r, size := utf8.DecodeRune(p[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			out = fmt.Appendf(out, `\x{%02X}`, p[i])
		case r == '\n':
			out = append(out, '\n')
		case r == '\t':
			out = append(out, `\t`...)
		case Suspicious(r):
			out = fmt.Appendf(out, `\u{%04X}`, r)
		default:
			out = append(out, p[i:i+size]...)
		}
		i += size
	}
	return out
}
