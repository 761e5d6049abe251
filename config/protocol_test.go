package config

import (
	"strings"
	"testing"
)

// protocol on a [[server]]: legacy (the default), 2026-07-28 or auto, for
// stdio and url servers; anything else is refused with the server named.
func TestConfig_ServerProtocol(t *testing.T) {
	env := mapEnv(map[string]string{"HOME": "/h"})
	for _, p := range []string{"legacy", "2026-07-28", "auto"} {
		c, err := Parse("c.toml", strings.Replace(minimal, `command = ["x"]`, "command = [\"x\"]\nprotocol = \""+p+"\"", 1), env)
		if err != nil || c.Servers[0].Protocol != p {
			t.Fatalf("protocol %q: %v", p, err)
		}
	}
	if c, err := Parse("c.toml", minimal, env); err != nil || c.Servers[0].Protocol != "" {
		t.Fatalf("no protocol: %v", err)
	}
	_, err := Parse("c.toml", strings.Replace(minimal, `command = ["x"]`, "command = [\"x\"]\nprotocol = \"2025-11-25\"", 1), env)
	if err == nil || !strings.Contains(err.Error(), `server[1] (fs).protocol: "2025-11-25": use "legacy" (the default), "2026-07-28" or "auto"`) {
		t.Fatalf("a bad protocol: %v", err)
	}
	for _, p := range []string{"legacy", "2026-07-28", "auto"} {
		remote := "[[server]]\nname = \"r\"\nurl = \"https://example.com/mcp\"\nprotocol = \"" + p + "\"\n"
		if c, err := Parse("c.toml", minimal+"\n"+remote, env); err != nil || c.Servers[1].Protocol != p {
			t.Fatalf("a url server at protocol %q: %v", p, err)
		}
	}
}
