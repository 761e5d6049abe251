// Package canon owns strict JSON reading and the canonical JSON encoding
// (RFC 8785, the JSON Canonicalization Scheme) used for every hash
// mcp-guard stores: approval hashes, request hashes, schema-cache keys.
//
// The strict reader ([Check], [Decode]) refuses, with an [*Error] that says
// where and why:
//
//   - malformed JSON, empty input, and trailing data after the value
//     (whitespace is fine);
//   - invalid UTF-8 and unpaired UTF-16 surrogate escapes (\ud800 alone);
//   - nesting deeper than [MaxDepth];
//   - duplicate object member names, compared after unescaping, so
//     {"a":1,"\u0061":2} is a duplicate;
//   - numbers the canonical form would change (see below).
//
// # Numbers
//
// RFC 8785 prints every number as the shortest decimal that round-trips
// the IEEE-754 double nearest to it. A literal is accepted only if its exact
// decimal value equals the exact decimal value of that printed form, so
// 1.0, 1.50, 1e2, -0, 0.1 and 5e-324 are accepted (they only change
// spelling) while 9007199254740993 (would become 9007199254740992),
// 1.00000000000000001 (would become 1), 1e400 (out of range) and 1e-400
// (would become 0) are refused with a reason that suggests sending the value
// as a string. Two different requests therefore never share a hash.
//
// # Encoding
//
// [Canonical] re-encodes JSON text that passes [Check]; [Digest] is the
// lowercase hex SHA-256 of that. [Marshal] encodes Go values and never
// substitutes: NaN, infinities, integers beyond ±2^53, invalid UTF-8 and
// raw messages that fail [Check] are errors, never stand-ins.
//
// The canonicalizer is github.com/go-json-experiment/json/jsontext (the
// mirror of the standard library's encoding/json/jsontext); its output is
// pinned byte for byte by testdata/golden.json. The package has no mutable
// globals and is safe for concurrent use.
package canon
