// Package safetext owns how text chosen by a model or an upstream server is
// shown on an operator's terminal: every character that could move the
// cursor, recolour, reorder or hide text (C0 and C1 controls, ANSI and OSC
// escapes, bidi controls, zero-width and tag characters, combining marks) is
// shown as a visible escape, and long values are cut head and tail with the
// cut marked, so what the operator reads is what is there. Writer is the one
// printer every command's output to the operator goes through, so that no
// code path can print such a character raw.
package safetext
