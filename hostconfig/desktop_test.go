package hostconfig

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func writeTemp(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), DesktopFileName)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// Entries come back in file order, with the fields mcp-guard uses read and
// every entry's bytes kept as they are.
func TestLoad_ServersInFileOrder(t *testing.T) {
	src := `{
	"globalShortcut": "Ctrl+Space",
	"mcpServers": {
		"zeta": {"command": "npx", "args": ["-y", "zeta-server"], "env": {"TOKEN": "s3cret"}},
		"alpha": {"url": "https://mcp.example.com/mcp", "type": "http", "headers": {"Authorization": "Bearer t"}},
		"mid": {"command": "/usr/bin/mid", "args": null, "disabled": true, "x-extra": {"k": [1, 2]}}
	}
}`
	c, err := LoadDesktop(writeTemp(t, src))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range c.Servers {
		names = append(names, s.Name)
	}
	if want := []string{"zeta", "alpha", "mid"}; !slices.Equal(names, want) {
		t.Fatalf("servers %v, want %v (file order)", names, want)
	}
	z, a, m := c.Servers[0], c.Servers[1], c.Servers[2]
	if z.Command != "npx" || !slices.Equal(z.Args, []string{"-y", "zeta-server"}) || z.Env["TOKEN"] != "s3cret" || !z.Stdio() {
		t.Errorf("zeta read as %+v", z)
	}
	if a.URL != "https://mcp.example.com/mcp" || a.Type != "http" || a.Headers["Authorization"] != "Bearer t" || a.Command != "" || a.Stdio() || !a.Remote() {
		t.Errorf("alpha read as %+v", a)
	}
	if m.Command != "/usr/bin/mid" || m.Args != nil || !m.Stdio() || m.Remote() {
		t.Errorf("mid read as %+v", m)
	}
	if want := `{"command": "/usr/bin/mid", "args": null, "disabled": true, "x-extra": {"k": [1, 2]}}`; string(m.Raw) != want {
		t.Errorf("mid.Raw = %s, want the bytes as in the file: %s", m.Raw, want)
	}
	if string(c.Raw) != src {
		t.Error("Raw is not the file's exact bytes")
	}
}

// A file without mcpServers has no servers; that is not an error.
func TestLoad_NoMCPServers(t *testing.T) {
	for _, src := range []string{`{}`, `{"theme": "dark"}`, "{\"mcpServers\": {}}\n"} {
		c, err := LoadDesktop(writeTemp(t, src))
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		if len(c.Servers) != 0 {
			t.Fatalf("%s: servers %v", src, c.Servers)
		}
	}
}

// What cannot be read is refused with where and why.
func TestLoad_Errors(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		want      []string
	}{
		{"syntax", "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\",}\n  }\n}", []string{"desktop: parse ", "line 3 col 26: ", "(in /mcpServers/a)", "invalid character '}'"}},
		{"truncated", "{\n  \"mcpServers\": {", []string{"line 2 col 18: unexpected EOF"}},
		{"empty", "", []string{"the file holds no JSON value"}},
		{"trailing", "{}\n{}", []string{"line 2 col 1: unexpected data after the top-level value"}},
		{"duplicate entry", "{\"mcpServers\": {\"a\": {}, \"a\": {}}}", []string{"line 1 col 26: ", `duplicate object member name "a" (in /mcpServers)`}},
		{"duplicate top", "{\"mcpServers\": {},\n\"mcpServers\": {}}", []string{"line 2 col 1: ", `duplicate object member name "mcpServers"`}},
		{"invalid utf-8", "{\"a\": \"\xff\"}", []string{"line 1 col 8", "invalid UTF-8"}},
		{"top not object", "[1, 2]", []string{"line 1 col 1: the top level is an array; want an object"}},
		{"mcpServers not object", "{\n  \"mcpServers\": [\"fs\"]\n}", []string{"line 2 col 17: mcpServers is an array; want an object"}},
		{"mcpServers null", "{\"mcpServers\": null}", []string{"mcpServers is null; want an object"}},
		{"entry not object", "{\"mcpServers\": {\"fs\": \"npx fs\"}}", []string{`mcpServers."fs" is a string; want an object`}},
		{"command not string", "{\"mcpServers\": {\"fs\": {\"command\": [\"npx\"]}}}", []string{`line 1 col 35: mcpServers."fs".command is an array; want a string`}},
		{"args not strings", "{\"mcpServers\": {\"fs\": {\"command\": \"x\", \"args\": [1]}}}", []string{`mcpServers."fs".args is an array; want an array of strings`}},
		{"headers not strings", "{\"mcpServers\": {\"r\": {\"url\": \"https://e\", \"headers\": [\"A: b\"]}}}", []string{`mcpServers."r".headers is an array; want an object of strings`}},
		{"env not strings", "{\"mcpServers\": {\"fs\": {\"command\": \"x\", \"env\": {\"A\": 1}}}}", []string{`mcpServers."fs".env is an object; want an object of strings`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := writeTemp(t, tc.src)
			_, err := LoadDesktop(p)
			if err == nil {
				t.Fatal("loaded")
			}
			if !strings.HasPrefix(err.Error(), "desktop: ") || !strings.Contains(err.Error(), p) {
				t.Errorf("error %q does not start with desktop: and name the file", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestLoad_MissingAndTooBig(t *testing.T) {
	p := filepath.Join(t.TempDir(), "nope.json")
	_, err := LoadDesktop(p)
	if err == nil || err.Error() != "desktop: read "+p+": no such file or directory" {
		t.Fatalf("missing file: %v", err)
	}
	big := writeTemp(t, `{"x": "`+strings.Repeat("a", MaxBytes)+`"}`)
	if _, err := LoadDesktop(big); err == nil || !strings.Contains(err.Error(), "larger than 4194304 bytes") {
		t.Fatalf("big file: %v", err)
	}
}

func TestDefaultPath(t *testing.T) {
	env := func(m map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	for _, tc := range []struct {
		goos string
		env  map[string]string
		want string
	}{
		{"linux", map[string]string{"HOME": "/home/me"}, "/home/me/.config/Claude/claude_desktop_config.json"},
		{"linux", map[string]string{"HOME": "/home/me", "XDG_CONFIG_HOME": "/xdg"}, "/xdg/Claude/claude_desktop_config.json"},
		{"linux", map[string]string{"HOME": "/home/me", "XDG_CONFIG_HOME": ""}, "/home/me/.config/Claude/claude_desktop_config.json"},
		{"linux", map[string]string{"HOME": "/home/me", "XDG_CONFIG_HOME": "rel"}, "/home/me/.config/Claude/claude_desktop_config.json"},
		{"freebsd", map[string]string{"HOME": "/home/me"}, "/home/me/.config/Claude/claude_desktop_config.json"},
		{"darwin", map[string]string{"HOME": "/Users/me", "XDG_CONFIG_HOME": "/xdg"}, "/Users/me/Library/Application Support/Claude/claude_desktop_config.json"},
		{"windows", map[string]string{"APPDATA": `C:\Users\me\AppData\Roaming`}, `C:\Users\me\AppData\Roaming\Claude\claude_desktop_config.json`},
		{"windows", map[string]string{"APPDATA": `C:\Users\me\AppData\Roaming\`, "HOME": "/h"}, `C:\Users\me\AppData\Roaming\Claude\claude_desktop_config.json`},
	} {
		got, err := DesktopPath(tc.goos, env(tc.env))
		if err != nil || got != tc.want {
			t.Errorf("DesktopPath(%s, %v) = %q, %v; want %q", tc.goos, tc.env, got, err, tc.want)
		}
	}
	for _, goos := range []string{"linux", "darwin", "windows"} {
		if p, err := DesktopPath(goos, env(nil)); err == nil {
			t.Errorf("%s with no environment: %q, want an error", goos, p)
		}
	}
}
