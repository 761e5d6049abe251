package hostconfig

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// FuzzWrap: for every host layout, a file Parse accepts wraps into one it
// accepts again, in which every guarded entry starts mcp-guard; wrapping
// that changes nothing; and (JSON) putting the entries back gives the
// original bytes.
func FuzzWrap(f *testing.F) {
	names, _ := filepath.Glob("../testdata/hosts/*")
	for _, n := range names {
		if b, err := os.ReadFile(n); err == nil && filepath.Ext(n) != ".md" {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"mcpServers": {"a": {"command": "x", "env": {"K": "${env:K}"}}, "b": {"url": "https://e"}}}`))
	f.Add([]byte(`{"mcpServers": {"r": {"command": null, "url": "https://e", "args": ["a"]}, "s": {"args": null, "command": "c", "type": null}}}`))
	f.Add([]byte("[mcp_servers.a]"))
	f.Add([]byte("x = 1\n[mcp_servers.\"my s\"] # c\ncommand = \"c\"\ntools.t.approval_mode = \"x\"\n[[mcp_servers.\"my s\".arr]]\nk = 1\n"))
	f.Add([]byte("[mcp_servers.a]\ncommand = 'x'\n[mcp_servers.a.env]\nK = \"\"\"\n[x]\n\"\"\"\n"))
	l := testLookup("/p")
	var files []File
	for _, h := range All() {
		files = append(files, h.Files(l)...)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, file := range files {
			d, err := Parse(file, data)
			if err != nil {
				continue
			}
			guard := map[string]bool{}
			for _, e := range d.Entries {
				guard[e.Name] = true
			}
			o := WrapOptions{Bin: "/bin/mcp-guard", Config: "/etc/g.toml", Guard: guard}
			rw := d.Wrap(o)
			w, err := Parse(file, rw.Bytes)
			if err != nil {
				t.Fatalf("%s: the rewrite does not parse: %v\n%s", file.Path, err, rw.Bytes)
			}
			for _, e := range w.Entries {
				if skipReason(e, o) == "" {
					t.Fatalf("%s: %q is still reached directly:\n%s", file.Path, e.Name, rw.Bytes)
				}
			}
			if again := w.Wrap(o); !bytes.Equal(again.Bytes, rw.Bytes) {
				t.Fatalf("%s: wrapping twice changed the file:\n%s\n---\n%s", file.Path, rw.Bytes, again.Bytes)
			}
			if file.Format != TOML {
				if u := w.Unwrap(rw.Changes, false); !bytes.Equal(u.Bytes, data) {
					t.Fatalf("%s: unwrap gave\n%q\nwant\n%q", file.Path, u.Bytes, data)
				}
			}
		}
	})
}
