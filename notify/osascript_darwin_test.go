package notify

import (
	"strings"
	"testing"
)

// The text is osascript's arguments, never part of the script: a name that
// ends an AppleScript string runs nothing.
func TestOsascriptArgs_TextIsArgvOnly(t *testing.T) {
	n := text(Waiting{Kind: "tool", Server: `s" & (do shell script "id") & "`, Name: "t\u202e", Approval: 4})
	args := osascriptArgs(n)
	if len(args) != 8 || args[6] != n.Summary || args[7] != n.Body {
		t.Fatalf("args %q", args)
	}
	for i, a := range args[:6] {
		if strings.Contains(a, "shell") || strings.Contains(a, "\u202e") {
			t.Fatalf("script argument %d holds the text: %q", i, a)
		}
	}
}
