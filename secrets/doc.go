// Package secrets owns credential redaction: which configured values are
// secrets (IsSecretName, NewKnown), finding every occurrence of those values
// in bytes bound for the host in any of the encodings a server may write them
// in (raw, JSON-escaped, percent, hex, base64), replacing each with
// "[redacted: <server> <name>]" (Redactor), and detecting well-known
// credential formats that mcp-guard did not configure (found credentials).
//
// A Hit names the secret (server and variable or header name) or the rule,
// the encoding and where it was found; it never holds the value. Nothing in
// this package logs or returns a secret value.
//
// Known-secret matching is one pass over the bytes: an Aho–Corasick automaton
// over every encoded form of every secret, stepped alongside decoding views
// (percent-decoding with '+' as a space or a plus, JSON-unescaping, and
// dropping line breaks, for wrapped base64) that join the pass only where
// the bytes hold '%', '+', '\\', CR or LF, and leave it as soon as they agree
// with the raw bytes again. JSON is walked token by token: each string
// is matched on its decoded text, and only strings that matched are
// re-encoded; every other byte is copied verbatim.
package secrets
