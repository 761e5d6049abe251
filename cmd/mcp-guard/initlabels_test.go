package main

import (
	"strings"
	"testing"

	"github.com/mcp-guard/mcp-guard/config"
)

// init suggests labels, commented, for the tools it recognises: reads of
// a filesystem-like server (or one over the home directory) private, fetch
// and browser tools untrusted; nothing for the rest.
func TestInit_SuggestsLabels(t *testing.T) {
	t.Parallel()
	fs := config.ServerConfig{Name: "fs", Command: []string{"npx", "-y", "@modelcontextprotocol/server-filesystem", "/home/me"}}
	notes := config.ServerConfig{Name: "notes", Command: []string{"notes-server", "/home/me/notes"}}
	web := config.ServerConfig{Name: "web", Command: []string{"uvx", "mcp-server-fetch"}}
	db := config.ServerConfig{Name: "db", Command: []string{"db-server", "/srv/db"}}
	for _, tc := range []struct {
		s    config.ServerConfig
		tool string
		want string
	}{
		{fs, "read_text_file", `# labels = ["private"]`},
		{fs, "list_directory", `# labels = ["private"]`},
		{fs, "write_file", ""},
		{notes, "read_note", `# labels = ["private"]`},
		{web, "fetch", `# labels = ["untrusted"]`},
		{db, "browser_navigate", `# labels = ["untrusted"]`},
		{db, "read_row", ""},
	} {
		got := suggestLabel(tc.s, tc.tool, "/home/me")
		if (tc.want == "") != (got == "") || !strings.HasPrefix(got, tc.want) {
			t.Errorf("%s/%s: %q, want %q", tc.s.Name, tc.tool, got, tc.want)
		}
	}
}
