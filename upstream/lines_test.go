package upstream

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestLineReader_SplitsAndCaps(t *testing.T) {
	lr := NewLineReader(strings.NewReader("a\r\nbb\n\n"+strings.Repeat("x", 10)+"\nlast"), 10)
	for _, want := range []string{"a", "bb", "", strings.Repeat("x", 10), "last"} {
		got, err := lr.ReadLine()
		if err != nil || string(got) != want {
			t.Fatalf("ReadLine = %q, %v; want %q", got, err, want)
		}
	}
	if _, err := lr.ReadLine(); !errors.Is(err, io.EOF) {
		t.Fatalf("at end: %v, want EOF", err)
	}
	lr = NewLineReader(strings.NewReader(strings.Repeat("y", 11)+"\nok\n"), 10)
	if _, err := lr.ReadLine(); !errors.Is(err, ErrLineTooLong) {
		t.Fatalf("11-byte line with cap 10: %v, want ErrLineTooLong", err)
	}
}

// The cap holds without reading the whole oversized line into memory: the
// reader stops soon after the cap, not at the end of the line.
func TestLineReader_RefusesHugeLineEarly(t *testing.T) {
	src := &countingReader{r: strings.NewReader(strings.Repeat("z", 8<<20) + "\nnext\n")}
	lr := NewLineReader(src, 1<<20)
	if _, err := lr.ReadLine(); !errors.Is(err, ErrLineTooLong) {
		t.Fatalf("8 MiB line with a 1 MiB cap: %v", err)
	}
	if src.n > 2<<20 {
		t.Fatalf("read %d bytes to refuse a line over 1 MiB", src.n)
	}
}

type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// FuzzLineReader: lines come back exactly as split by '\n' (minus one
// trailing '\r'), none longer than the cap, and it never panics.
func FuzzLineReader(f *testing.F) {
	f.Add([]byte("a\nb\r\n\nccc"), 3)
	f.Add([]byte(strings.Repeat("q", 100)), 10)
	f.Fuzz(func(t *testing.T, in []byte, max int) {
		if max < 1 || max > 1<<16 {
			return
		}
		lr := NewLineReader(bytes.NewReader(in), max)
		var got [][]byte
		for {
			line, err := lr.ReadLine()
			if errors.Is(err, io.EOF) {
				break
			}
			if errors.Is(err, ErrLineTooLong) {
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(line) > max {
				t.Fatalf("line of %d bytes with cap %d", len(line), max)
			}
			got = append(got, line)
		}
		want := bytes.Split(in, []byte("\n"))
		if len(want) > 0 && len(want[len(want)-1]) == 0 {
			want = want[:len(want)-1]
		}
		if len(got) != len(want) {
			t.Fatalf("%d lines, want %d", len(got), len(want))
		}
		for i := range want {
			if !bytes.Equal(got[i], bytes.TrimSuffix(want[i], []byte("\r"))) {
				t.Fatalf("line %d = %q, want %q", i, got[i], want[i])
			}
		}
	})
}
