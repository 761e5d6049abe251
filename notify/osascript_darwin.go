package notify

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
)

// osascriptArgs are osascript's arguments for n: a script that shows its
// two arguments as a notification, then n's text as those arguments
// (argv), never written into the script, so no name can end a string and
// run AppleScript of its own.
func osascriptArgs(n note) []string {
	return []string{
		"-e", "on run argv",
		"-e", `display notification (item 2 of argv) with title "mcp-guard" subtitle (item 1 of argv)`,
		"-e", "end run",
		n.Summary, n.Body,
	}
}

// osascriptSender runs osascript directly (no shell) for each note.
type osascriptSender struct{ path string }

func (s osascriptSender) String() string { return "osascript (display notification)" }

func (s osascriptSender) send(ctx context.Context, n note) error {
	cmd := exec.CommandContext(ctx, s.path, osascriptArgs(n)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("notify: osascript: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

func (osascriptSender) close() {}
