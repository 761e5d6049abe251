package canon

import (
	"bytes"
	"sync"

	"github.com/go-json-experiment/json/jsontext"
)

// decoder is a jsontext.Decoder reading a []byte in place, kept for reuse:
// a decoder made afresh for each message allocates its buffers and its
// stack of member names again (about 24 allocations for a small tools/call
// answer, which three readers parse), and one reset for the next message
// allocates none.
type decoder struct {
	buf bytes.Buffer
	n   int // the input's length
	jsontext.Decoder
}

// maxPooled is the longest input whose decoder is kept for reuse: a
// decoder keeps the names of the largest object it read, so one that read
// a large message is left to the garbage collector.
const maxPooled = 64 << 10

// decoders holds idle decoders. It is a cache of scratch space, like
// encoding/json's pool of encoders: what a decoder read before has no
// effect on what it reads next (Reset starts it afresh), so sharing it
// between callers shares no state.
var decoders = sync.Pool{New: func() any { return new(decoder) }}

// newDecoder returns a decoder reading raw in place; put it back with
// free when done with it and every token it returned.
func newDecoder(raw []byte, opts ...jsontext.Options) *decoder {
	d := decoders.Get().(*decoder)
	d.buf, d.n = *bytes.NewBuffer(raw), len(raw)
	d.Reset(&d.buf, opts...)
	return d
}

// free forgets the input (so the pool holds no message alive) and keeps
// the decoder for reuse if its input was small.
func (d *decoder) free() {
	n := d.n
	d.buf, d.n = bytes.Buffer{}, 0
	d.Reset(&d.buf)
	if n <= maxPooled {
		decoders.Put(d)
	}
}
