package hostconfig

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// FuzzLoadDesktop: ParseDesktop never panics; when it accepts a file, both kinds of wrap
// give a file it accepts again, wrapping that changes nothing, and a
// Save then Restore puts the original bytes back exactly.
func FuzzLoadDesktop(f *testing.F) {
	for _, seed := range []string{
		`{}`,
		`{"mcpServers": {}}`,
		"{\r\n\t\"mcpServers\": {\"fs\": {\"command\": \"npx\", \"args\": [\"-y\"], \"env\": {\"K\": \"v\"}}}, \"x\": [1.0, 2e1]}  \n",
		`{"mcpServers": {"mcp-guard": {"command": "y"}, "r": {"url": "https://e"}, "s": {"command": "s", "type": "stdio", "cwd": "/"}}}`,
		`{"mcpServers": {"s": {"command": "c", "url": null, "args": null}, "r": {"url": "https://e", "command": null, "type": null}}}`,
		`{"mcpServers": {"h": {"type": "http", "url": "https://u:p@e/m?k=v#f", "args": ["a"], "headers": {"A": "b"}}, "b": {"command": "c", "url": "https://e"}}}`,
		`{"a": {"b": [null, true, "\u2028<&>"]}, "mcpServers": {"t": {"command": "\u0074", "args": null}}}`,
		`{"mcpServers": {"a": {}, "a": {}}}`,
		`[]`,
		"{\"mcpServers\": {\"x\": {\"command\": \"\xff\"}}}",
	} {
		f.Add([]byte(seed))
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseDesktop("c.json", data)
		if err != nil {
			return
		}
		guard := map[string]bool{}
		for _, s := range c.Servers {
			guard[s.Name] = true
		}
		for _, perServer := range []bool{false, true} {
			o := DesktopOptions{Bin: "/bin/mcp-guard", Config: "/etc/mcp-guard.toml", Guard: guard, PerServer: perServer}
			rw := c.Wrap(o)
			w, err := ParseDesktop("wrapped.json", rw.Bytes)
			if err != nil {
				t.Fatalf("perServer=%v: the rewrite does not parse: %v\n%s", perServer, err, rw.Bytes)
			}
			if again := w.Wrap(o); !bytes.Equal(again.Bytes, rw.Bytes) {
				t.Fatalf("perServer=%v: wrapping twice changed the file:\n%s\n---\n%s", perServer, rw.Bytes, again.Bytes)
			}
			for _, s := range w.Servers {
				if desktopSkipReason(s, o) == "" {
					t.Fatalf("perServer=%v: %q is still reached directly:\n%s", perServer, s.Name, rw.Bytes)
				}
			}
			_ = w.Redacted()

			p := filepath.Join(dir, DesktopFileName)
			if err := os.WriteFile(p, data, 0o600); err != nil {
				t.Fatal(err)
			}
			saved, err := ReadSaved(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := Save(p, data, rw.Bytes, saved); err != nil {
				t.Fatal(err)
			}
			if saved, err = ReadSaved(p); err != nil {
				t.Fatal(err)
			}
			if err := Restore(p, saved); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, data) {
				t.Fatalf("perServer=%v: wrap then unwrap gave\n%q\nwant\n%q", perServer, got, data)
			}
		}
	})
}
