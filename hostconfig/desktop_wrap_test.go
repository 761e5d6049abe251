package hostconfig

import (
	"slices"
	"strings"
	"testing"
)

const wrapSrc = "{\n" +
	"\t\"globalShortcut\": \"Ctrl+Space\",\n" +
	"\t\"mcpServers\": {\n" +
	"\t\t\"fs\": {\"command\": \"npx\", \"args\": [\"-y\", \"@modelcontextprotocol/server-filesystem\", \"/home/me\"], \"env\": {\"TOKEN\": \"s3cret\"}, \"cwd\": \"/tmp\", \"x-note\": \"kept <&>\"},\r\n" +
	"\t\t\"remote\": {\"url\": \"https://mcp.example.com/mcp\", \"headers\": {\"Authorization\": \"Bearer abc\"}},\n" +
	"\t\t\"other\": {\"command\": \"other-server\"},\n" +
	"\t\t\"notes\": {\"args\": [\"notes.js\"], \"command\": \"node\"},\n" +
	"\t\t\"web\": {\"type\": \"sse\", \"url\": \"https://w.example/sse?key=k1\", \"headers\": {\"X-Key\": \"k2\"}}\n" +
	"\t},   \n" +
	"\t\"zz\": [1.50, 1e2, \"\\u00e9\"]\n" +
	"}"

func desktopWrapOpts(perServer bool) DesktopOptions {
	return DesktopOptions{
		Bin:       "/opt/mcp-guard/bin/mcp-guard",
		Config:    "/home/me/.config/mcp-guard/config.toml",
		Guard:     map[string]bool{"fs": true, "notes": true, "remote": true},
		PerServer: perServer,
	}
}

func mustParse(t *testing.T, src string) *DesktopConfig {
	t.Helper()
	c, err := ParseDesktop("c.json", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Aggregate: the guarded stdio entries go, one mcp-guard entry comes last;
// every other key and entry stays, in order, re-indented, numbers and
// escapes spelled as they were.
func TestWrap_Aggregate(t *testing.T) {
	rw := mustParse(t, wrapSrc).Wrap(desktopWrapOpts(false))
	want := `{
  "globalShortcut": "Ctrl+Space",
  "mcpServers": {
    "other": {
      "command": "other-server"
    },
    "web": {
      "type": "sse",
      "url": "https://w.example/sse?key=k1",
      "headers": {
        "X-Key": "k2"
      }
    },
    "mcp-guard": {
      "command": "/opt/mcp-guard/bin/mcp-guard",
      "args": [
        "serve",
        "--config",
        "/home/me/.config/mcp-guard/config.toml"
      ]
    }
  },
  "zz": [
    1.50,
    1e2,
    "\u00e9"
  ]
}`
	if string(rw.Bytes) != want {
		t.Fatalf("wrapped:\n%s\nwant:\n%s", rw.Bytes, want)
	}
	if !slices.Equal(rw.Guarded, []string{"fs", "remote", "notes"}) {
		t.Errorf("guarded %v", rw.Guarded)
	}
	want2 := []DesktopSkip{
		{"other", "no [[server]] of that name in /home/me/.config/mcp-guard/config.toml", false},
		{"web", "no [[server]] of that name in /home/me/.config/mcp-guard/config.toml", false},
	}
	if !slices.Equal(rw.Skipped, want2) {
		t.Errorf("skipped %v, want %v", rw.Skipped, want2)
	}
	if strings.Contains(string(rw.Bytes), "s3cret") || strings.Contains(string(rw.Bytes), "Bearer abc") {
		t.Error("a guarded server's env or headers stayed in the file")
	}
	again := mustParse(t, string(rw.Bytes)).Wrap(desktopWrapOpts(false))
	if string(again.Bytes) != string(rw.Bytes) {
		t.Errorf("wrapping the result again changed it:\n%s", again.Bytes)
	}
}

// Per server: each guarded entry is replaced where it is; its env and cwd
// go, its other fields stay; args are added after command if missing.
func TestWrap_PerServer(t *testing.T) {
	rw := mustParse(t, wrapSrc).Wrap(desktopWrapOpts(true))
	want := `{
  "globalShortcut": "Ctrl+Space",
  "mcpServers": {
    "fs": {
      "command": "/opt/mcp-guard/bin/mcp-guard",
      "args": [
        "serve",
        "--config",
        "/home/me/.config/mcp-guard/config.toml",
        "--server",
        "fs"
      ],
      "x-note": "kept <&>"
    },
    "remote": {
      "command": "/opt/mcp-guard/bin/mcp-guard",
      "args": [
        "serve",
        "--config",
        "/home/me/.config/mcp-guard/config.toml",
        "--server",
        "remote"
      ]
    },
    "other": {
      "command": "other-server"
    },
    "notes": {
      "args": [
        "serve",
        "--config",
        "/home/me/.config/mcp-guard/config.toml",
        "--server",
        "notes"
      ],
      "command": "/opt/mcp-guard/bin/mcp-guard"
    },
    "web": {
      "type": "sse",
      "url": "https://w.example/sse?key=k1",
      "headers": {
        "X-Key": "k2"
      }
    }
  },
  "zz": [
    1.50,
    1e2,
    "\u00e9"
  ]
}`
	if string(rw.Bytes) != want {
		t.Fatalf("wrapped:\n%s\nwant:\n%s", rw.Bytes, want)
	}
	again := mustParse(t, string(rw.Bytes)).Wrap(desktopWrapOpts(true))
	if string(again.Bytes) != string(rw.Bytes) {
		t.Errorf("wrapping the result again changed it:\n%s", again.Bytes)
	}

	typed := mustParse(t, `{"mcpServers": {"remote": {"x-before": 1, "type": "http", "url": "https://e/mcp", "args": ["odd"], "headers": {"A": "b"}, "x-after": 2}}}`).Wrap(desktopWrapOpts(true))
	if want := `{"mcpServers":{"remote":{"x-before":1,"command":"/opt/mcp-guard/bin/mcp-guard","args":["serve","--config","/home/me/.config/mcp-guard/config.toml","--server","remote"],"x-after":2}}}`; string(compact(typed.Bytes)) != want {
		t.Errorf("url entry wrapped as:\n%s", typed.Bytes)
	}

	noArgs := mustParse(t, `{"mcpServers": {"fs": {"type": "stdio", "command": "fs-server", "env": {}}}}`).Wrap(desktopWrapOpts(true))
	if want := `{
  "mcpServers": {
    "fs": {
      "type": "stdio",
      "command": "/opt/mcp-guard/bin/mcp-guard",
      "args": [
        "serve",
        "--config",
        "/home/me/.config/mcp-guard/config.toml",
        "--server",
        "fs"
      ]
    }
  }
}`; string(noArgs.Bytes) != want {
		t.Errorf("entry without args wrapped as:\n%s", noArgs.Bytes)
	}
}

// An existing mcp-guard entry is replaced where it is; a file without
// mcpServers gets one; a trailing newline is kept.
func TestWrap_ExistingEntryAndNoServers(t *testing.T) {
	rw := mustParse(t, `{"mcpServers": {"mcp-guard": {"command": "/old/mcp-guard", "args": ["serve"]}, "fs": {"command": "x"}}}`+"\n").Wrap(desktopWrapOpts(false))
	if !rw.Replaced || !strings.HasPrefix(string(rw.Bytes), "{\n  \"mcpServers\": {\n    \"mcp-guard\": {\n      \"command\": \"/opt/mcp-guard/bin/mcp-guard\"") || !strings.HasSuffix(string(rw.Bytes), "}\n}\n") {
		t.Errorf("replaced=%v:\n%s", rw.Replaced, rw.Bytes)
	}
	if strings.Count(string(rw.Bytes), `"mcp-guard":`) != 1 || strings.Contains(string(rw.Bytes), `"fs"`) {
		t.Errorf("want one mcp-guard entry and no fs:\n%s", rw.Bytes)
	}

	rw = mustParse(t, `{"theme": "dark"}`).Wrap(desktopWrapOpts(false))
	if want := "{\n  \"theme\": \"dark\",\n  \"mcpServers\": {\n    \"mcp-guard\": {"; !strings.HasPrefix(string(rw.Bytes), want) {
		t.Errorf("no mcpServers:\n%s", rw.Bytes)
	}

	// Per server with nothing guarded changes nothing but the indentation.
	rw = mustParse(t, `{"mcpServers": {"other": {"command": "x"}}}`).Wrap(desktopWrapOpts(true))
	if len(rw.Guarded) != 0 || string(rw.Bytes) != "{\n  \"mcpServers\": {\n    \"other\": {\n      \"command\": \"x\"\n    }\n  }\n}" {
		t.Errorf("nothing to guard:\n%s", rw.Bytes)
	}
}

// Entries that are not stdio servers, or that start mcp-guard already, are
// never guarded.
func TestWrap_SkipReasons(t *testing.T) {
	src := `{"mcpServers": {
		"sse": {"type": "sse", "command": "x"},
		"nocmd": {"args": ["a"]},
		"both": {"command": "x", "url": "https://e"},
		"ws": {"type": "ws", "url": "wss://e"},
		"self": {"command": "/usr/local/bin/mcp-guard", "args": ["serve", "--config", "/c.toml"]},
		"bin": {"command": "/opt/mcp-guard/bin/mcp-guard"}}}`
	o := desktopWrapOpts(false)
	o.Guard = map[string]bool{"sse": true, "nocmd": true, "both": true, "ws": true, "self": true, "bin": true}
	rw := mustParse(t, src).Wrap(o)
	want := []DesktopSkip{
		{"sse", `type "sse": mcp-guard relays stdio, streamable HTTP and SSE servers`, false},
		{"nocmd", "it has neither a command nor a url", false},
		{"both", "it has both a command and a url", false},
		{"ws", `type "ws": mcp-guard relays stdio, streamable HTTP and SSE servers`, false},
		{"self", "it starts mcp-guard already", true},
		{"bin", "it starts mcp-guard already", true},
	}
	if len(rw.Guarded) != 0 || !slices.Equal(rw.Skipped, want) {
		t.Errorf("guarded %v, skipped %v", rw.Guarded, rw.Skipped)
	}
}

// Redacted hides every env and headers value, and nothing else.
func TestRedacted(t *testing.T) {
	got := string(mustParse(t, wrapSrc).Redacted())
	for _, secret := range []string{"s3cret", "Bearer abc", "k1", "k2"} {
		if strings.Contains(got, secret) {
			t.Errorf("%q shown:\n%s", secret, got)
		}
	}
	for _, kept := range []string{`"TOKEN": "[redacted]"`, `"Authorization": "[redacted]"`, `"/home/me"`, `"x-note": "kept <&>"`, `"url": "https://w.example/sse?[redacted]"`, `"url": "https://mcp.example.com/mcp"`} {
		if !strings.Contains(got, kept) {
			t.Errorf("%s missing:\n%s", kept, got)
		}
	}
}
