package notify

import (
	"log/slog"
	"os/exec"
)

// osascriptPath is macOS's AppleScript runner, part of the system.
const osascriptPath = "/usr/bin/osascript"

// Available says how this machine shows desktop notifications, and whether
// it can: on macOS, always, through osascript's "display notification".
func Available(env func(string) (string, bool)) (how string, ok bool) {
	if _, err := exec.LookPath(osascriptPath); err != nil {
		return osascriptPath + " is missing", false
	}
	return "osascript (display notification)", true
}

// New starts a Notifier that sends through osascript.
func New(env func(string) (string, bool), log *slog.Logger) (*Notifier, error) {
	return newNotifier(osascriptSender{path: osascriptPath}, log), nil
}
