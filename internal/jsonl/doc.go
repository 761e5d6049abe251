// Package jsonl owns mcp-guard's machine-readable output: one JSON object
// per line, with the same guarantee the terminal printer (internal/safetext)
// gives for host-, model- or server-chosen text: no C0 or C1 control, bidi
// control, zero-width, tag or other character safetext.Suspicious names
// appears raw; each is written as a \u escape (a surrogate pair above
// U+FFFF), so the line decodes to the same strings and shows nothing hidden
// when printed.
package jsonl
