package notify

import (
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mcp-guard/mcp-guard/internal/safetext"
)

// FuzzText: whatever an upstream or the operator names a server, a tool or
// a kind, the notification is valid UTF-8, has no character that hides,
// moves or reorders text but its one line break, is bounded, and names
// the approval.
func FuzzText(f *testing.F) {
	f.Add("tool", "fs", "write_file", int64(1))
	f.Add("prompt", "s\x1b[2J", "p\u202e\u200b\U000E0041<b>&", int64(42))
	f.Add("\u0085", "\xff", strings.Repeat("日", 200), int64(-1))
	f.Fuzz(func(t *testing.T, kind, server, name string, id int64) {
		n := text(Waiting{Kind: kind, Server: server, Name: name, Approval: id})
		for _, s := range []string{n.Summary, n.Body, escapeMarkup(n.Body)} {
			if !utf8.ValidString(s) {
				t.Fatalf("not UTF-8: %q", s)
			}
			for _, r := range s {
				if r != '\n' && safetext.Suspicious(r) {
					t.Fatalf("raw %U in %q", r, s)
				}
			}
		}
		if strings.Count(n.Body, "\n") != 1 || strings.Contains(n.Summary, "\n") || len(n.Body) > 400 {
			t.Fatalf("shape: %q / %q", n.Summary, n.Body)
		}
		idText := strconv.FormatInt(id, 10)
		if !strings.Contains(n.Summary, "approval "+idText+" ") || !strings.HasSuffix(n.Body, "mcp-guard approvals show "+idText) {
			t.Fatalf("approval not named: %q / %q", n.Summary, n.Body)
		}
	})
}
