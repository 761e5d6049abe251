package main

import (
	"strings"
	"testing"
)

// init's proposal is commented out, names the directories among the
// arguments (written to as well for the filesystem server), and loads once
// uncommented.
func TestInit_ProposesACommentedSandbox(t *testing.T) {
	t.Parallel()
	docs := t.TempDir()
	got := proposeSandbox([]string{"npx", "-y", "@modelcontextprotocol/server-filesystem", docs, "/no/such/dir"})
	for _, line := range strings.Split(strings.TrimSpace(got), "\n") {
		if !strings.HasPrefix(line, "#") {
			t.Fatalf("an uncommented line: %q", line)
		}
	}
	for _, want := range []string{"# [server.sandbox]\n", "# read = [" + tomlString(docs) + "]", "# write = [" + tomlString(docs) + "]", "# network = \"none\"", "install the server first"} {
		if !strings.Contains(got, want) {
			t.Errorf("proposal has no %q:\n%s", want, got)
		}
	}
	other := proposeSandbox([]string{"/usr/bin/node", "server.js", docs})
	if !strings.Contains(other, "# write = []") || strings.Contains(other, "install the server first") {
		t.Errorf("a server that is not the filesystem server:\n%s", other)
	}
	var uncommented []string
	for _, l := range strings.Split(strings.TrimSpace(got), "\n") {
		if strings.HasPrefix(l, "# [server.sandbox]") || strings.HasPrefix(l, "# read") || strings.HasPrefix(l, "# write") || strings.HasPrefix(l, "# network") {
			uncommented = append(uncommented, strings.TrimPrefix(l, "# "))
		}
	}
	src := "[[server]]\nname = \"fs\"\ncommand = [\"x\"]\n" + strings.Join(uncommented, "\n") + "\n[[rule]]\nserver = \"fs\"\ntool = \"*\"\nclass = \"read\"\naction = \"allow\"\n"
	c, err := parseConfig(t, src, func(string) (string, bool) { return "/h", true })
	if err != nil || c.Servers[0].SandboxPolicy() == nil {
		t.Fatalf("the proposal uncommented does not load: %v\n%s", err, src)
	}
}

func TestFetchesAtStart(t *testing.T) {
	t.Parallel()
	for cmd, want := range map[string]bool{
		"npx -y @modelcontextprotocol/server-filesystem /x": true,
		"npx --yes pkg":                     true,
		"npx pkg":                           false,
		"/usr/local/bin/uvx mcp-server-git": true,
		"node /x/index.js":                  false,
		"npm exec pkg":                      true,
		"pipx run pkg":                      true,
	} {
		if got := fetchesAtStart(strings.Fields(cmd)); got != want {
			t.Errorf("%s: %v, want %v", cmd, got, want)
		}
	}
}
