package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A path rule on a stdio server is decided on the path as written and as
// the kernel will resolve it: a symbolic link inside the allowed tree that
// points out of it does not carry a call out (refused, recorded, never
// forwarded), while a path that stays inside is forwarded.
func TestServe_SymlinkOutOfTheAllowedTreeRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	root, err := filepath.EvalSymlinks(e.dir)
	if err != nil {
		t.Fatal(err)
	}
	allowed, secret := filepath.Join(root, "allowed"), filepath.Join(root, "secret")
	for _, d := range []string{allowed, secret} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("../secret", filepath.Join(allowed, "notes")); err != nil {
		t.Fatal(err)
	}
	cfg := e.config(e.fake("fs", `{"tools":[{"name":"read_file","inputSchema":{"type":"object"}}]}`), fmt.Sprintf(`
[[rule]]
server = "fs"
tool = "read_file"
class = "read"
action = "allow"
when = { "/path" = { path = %q } }
`, allowed+"/**"))
	r := e.rawConnect(cfg)
	for i, p := range []string{allowed + "/notes/id_ed25519", allowed + "/notes/../secret/id_ed25519"} {
		r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"fs__read_file","arguments":{"path":%q}}}`, i+1, p))
		if m := r.waitID(fmt.Sprint(i + 1)); !strings.Contains(string(m.Result), `"isError":true`) || !strings.Contains(string(m.Result), "denied") {
			t.Fatalf("%s through a link out of the tree: %s", p, m.line)
		}
	}
	if n := len(e.calls("fs")); n != 0 {
		t.Fatalf("%d calls through the link reached the upstream", n)
	}
	rows := e.callsByTool(e.openLedger())
	if row := rows["fs__read_file"]; row.Decision != "deny" {
		t.Fatalf("the refused call's row: %+v", row)
	}
	// explain's rule trace reads the path as written, where rule 1
	// matches; it says the rules decided on the resolved path instead.
	out, _ := e.mcpGuard("explain", "fs/read_file", fmt.Sprintf(`{"path":%q}`, allowed+"/notes/id_ed25519"), "--config", cfg)
	for _, want := range []string{") would match: class read, action allow\n", "\nnote    the rules decided on the paths as the server will open them", "\ndecided by rules: deny (no rule matches these arguments)\n"} {
		if !strings.Contains(out, want) {
			t.Fatalf("explain of a path through the link lacks %q:\n%s", want, out)
		}
	}
	r.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"fs__read_file","arguments":{"path":%q}}}`, allowed+"/todo.md"))
	if m := r.waitID(`9`); strings.Contains(string(m.Result), `"isError":true`) {
		t.Fatalf("a path inside the tree refused: %s", m.line)
	}
	if n := len(e.calls("fs")); n != 1 {
		t.Fatalf("%d calls reached the upstream, want 1", n)
	}
}
