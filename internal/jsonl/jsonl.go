package jsonl

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/mcp-guard/mcp-guard/internal/safetext"
)

// Writer writes values as JSON lines.
type Writer struct {
	w io.Writer
}

// NewWriter returns a Writer writing lines to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write encodes v as one line of JSON, escaped with Escape, and writes it.
func (w *Writer) Write(v any) error {
	line, err := Marshal(v)
	if err != nil {
		return err
	}
	if _, err := w.w.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("jsonl: write: %w", err)
	}
	return nil
}

// Marshal encodes v as JSON on one line (no HTML escaping) with every
// character safetext.Suspicious names written as a \u escape.
func Marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("jsonl: encode: %w", err)
	}
	return Escape(bytes.TrimSuffix(b.Bytes(), []byte("\n"))), nil
}

// Escape rewrites JSON text as encoding/json writes it (valid UTF-8, every
// non-ASCII character inside a string) with each character
// safetext.Suspicious names as a \u escape. Outside strings JSON text is
// ASCII, and a raw non-ASCII character never follows a backslash, so the
// result is the same JSON value.
func Escape(js []byte) []byte {
	out := make([]byte, 0, len(js))
	for i := 0; i < len(js); {
		r, size := utf8.DecodeRune(js[i:])
		if r < utf8.RuneSelf && r >= 0x20 && r != 0x7F {
			out = append(out, js[i])
			i++
			continue
		}
		i += size
		if r == utf8.RuneError && size == 1 {
			out = append(out, `\ufffd`...) // encoding/json never writes this
			continue
		}
		if !safetext.Suspicious(r) {
			out = utf8.AppendRune(out, r)
			continue
		}
		if r > 0xFFFF {
			hi, lo := utf16.EncodeRune(r)
			out = fmt.Appendf(out, `\u%04x\u%04x`, hi, lo)
			continue
		}
		out = fmt.Appendf(out, `\u%04x`, r)
	}
	return out
}
