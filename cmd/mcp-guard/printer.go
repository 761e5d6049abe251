package main

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/mcp-guard/mcp-guard/internal/safetext"
)

// terminal returns where mcp-guard's own control output goes.
func (c cli) terminal() io.Writer {
	if c.term != nil {
		return c.term
	}
	return c.stdout
}

// protocolOnStdout reports whether cmd's standard output carries MCP
// messages, not text for the operator: only its stderr is escaped.
func protocolOnStdout(cmd string) bool { return cmd == "serve" || cmd == "demo-upstream" }

// forOperator routes everything a command prints for the operator through
// one printer, safetext.Writer (SAFETY A4): whatever host-, model- or
// server-chosen text a code path prints, no control, bidi, zero-width or
// tag character reaches the terminal raw. flush ends the output.
func (c cli) forOperator(cmd string) (_ cli, flush func()) {
	c.term = c.terminal()
	stderr := safetext.NewWriter(c.stderr)
	c.stderr = stderr
	if protocolOnStdout(cmd) {
		return c, func() { stderr.Flush() }
	}
	stdout := safetext.NewWriter(c.stdout)
	c.stdout = stdout
	return c, func() { stdout.Flush(); stderr.Flush() }
}

// operatorLog is the logger every command writes its log lines with: each
// attribute value (an upstream's error text, a tool name a host sent...) is
// escaped with safetext.Escape, so the operator reads it in the one notation
// every other output uses, and the line goes to w (the printer) besides.
func operatorLog(w io.Writer, level slog.Level) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level, ReplaceAttr: escapeAttr}))
}

func escapeAttr(_ []string, a slog.Attr) slog.Attr {
	switch v := a.Value; v.Kind() {
	case slog.KindString:
		a.Value = slog.StringValue(safetext.Escape(v.String()))
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			a.Value = slog.StringValue(safetext.Escape(x.Error()))
		case fmt.Stringer:
			a.Value = slog.StringValue(safetext.Escape(x.String()))
		case []byte:
			a.Value = slog.StringValue(safetext.Escape(string(x)))
		}
	}
	return a
}
