package secrets

import (
	"encoding/base64"
	"encoding/hex"
)

// Encoding is how an occurrence was written.
type Encoding uint8

const (
	Raw         Encoding = iota // the value's own bytes
	JSONEscaped                 // inside a JSON string with escapes, or JSON-escaped in text
	Percent                     // percent-encoded (encodeURIComponent, url.QueryEscape, any hex case)
	Hex                         // hex, either case
	Base64                      // base64, standard or URL alphabet, any alignment, padded or not
	Found                       // a found credential, in the format its rule names
)

func (e Encoding) String() string {
	switch e {
	case Raw:
		return "raw"
	case JSONEscaped:
		return "json-escaped"
	case Percent:
		return "percent"
	case Hex:
		return "hex"
	case Base64:
		return "base64"
	case Found:
		return "found"
	}
	return "unknown"
}

// pattern is one encoded form of a known secret, or a keyword that makes a
// found-credential rule worth running.
type pattern struct {
	secret      int32  // index into the known list; -1 for a keyword
	rules       uint64 // keyword: the rules to run
	enc         Encoding
	n           int
	lead, trail int  // base64: partial characters before and after the core
	url         bool // base64: URL alphabet
}

// base64Core is the part of base64(prefix+v) that depends on v alone, where
// prefix is k bytes (k = 0, 1, 2: the three alignments), and the number of
// characters on each side that hold some of v's bits along with a
// neighbour's. Padding never falls inside the core, so the padded and
// unpadded encodings share it.
func base64Core(enc *base64.Encoding, v []byte, k int) (core []byte, lead, trail int) {
	buf := make([]byte, k+len(v))
	copy(buf[k:], v)
	full := []byte(enc.EncodeToString(buf))
	first := (8*k + 5) / 6
	last := 8 * (k + len(v)) / 6
	if (8*k)%6 != 0 {
		lead = 1
	}
	if (8*(k+len(v)))%6 != 0 {
		trail = 1
	}
	return full[first:last], lead, trail
}

// knownPatterns returns the exact-match forms (raw and base64) and the hex
// form (lower case; matched against lower-cased input) of secret i.
func knownPatterns(i int, v []byte) (exact [][]byte, ep []pattern, hexp []byte) {
	seen := map[string]bool{string(v): true}
	exact = append(exact, v)
	ep = append(ep, pattern{secret: int32(i), enc: Raw, n: len(v)})
	for _, alpha := range []struct {
		e   *base64.Encoding
		url bool
	}{{base64.StdEncoding, false}, {base64.URLEncoding, true}} {
		for k := range 3 {
			core, lead, trail := base64Core(alpha.e, v, k)
			if seen[string(core)] {
				continue
			}
			seen[string(core)] = true
			exact = append(exact, core)
			ep = append(ep, pattern{secret: int32(i), enc: Base64, n: len(core), lead: lead, trail: trail, url: alpha.url})
		}
	}
	return exact, ep, []byte(hex.EncodeToString(v))
}

// isB64 reports whether c is in the base64 alphabet (url: the URL one).
func isB64(c byte, url bool) bool {
	switch {
	case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		return true
	case url:
		return c == '-' || c == '_'
	}
	return c == '+' || c == '/'
}
