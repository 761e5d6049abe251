package gate

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/mcp-guard/mcp-guard/classify"
)

// On a local (stdio) server a path rule decides the path as written and as
// the kernel will resolve it, keeping the stricter answer: a link inside the
// allowed tree that leads out of it is not allowed, and a link into a denied
// tree is denied. A remote server's paths are not on this machine and are
// decided as written.
func TestDecide_SymlinksDecidedWhereTheyLead(t *testing.T) {
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"allowed/sub", "secret"} {
		if err := os.MkdirAll(filepath.Join(d, dir), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range [][2]string{{"../secret", "allowed/out"}, {d + "/secret/key", "allowed/key"}, {"../allowed", "secret/in"}} {
		if err := os.Symlink(l[0], filepath.Join(d, l[1])); err != nil {
			t.Fatal(err)
		}
	}
	rules, err := classify.Compile([]classify.Rule{
		{Server: "*", Tool: "rm", Class: classify.Destructive, Action: classify.Deny,
			When: map[string]classify.Predicate{"/path": {Path: str(d + "/secret/**")}}},
		{Server: "*", Tool: "rm", Class: classify.Destructive, Action: classify.Allow},
		{Server: "*", Tool: "read", Class: classify.Read, Action: classify.Allow,
			When: map[string]classify.Predicate{"/path": {Path: str(d + "/allowed/**")}}},
		{Server: "*", Resource: "file://" + d + "/allowed/**", Action: classify.Allow},
	})
	if err != nil {
		t.Fatal(err)
	}
	local := New(rules, LocalServers("fs"))
	for _, tc := range []struct {
		tool, path string
		want       Outcome
	}{
		{"read", d + "/allowed/sub/a.txt", Allow},
		{"read", d + "/allowed/out/key", Deny},
		{"read", d + "/allowed/key", Deny},
		{"read", d + "/allowed/out/../allowed/x", Allow}, // out/.. is d, then allowed/x
		{"read", d + "/allowed/out/../secret/key", Deny},
		{"rm", d + "/allowed/sub", Allow},
		{"rm", d + "/allowed/out/key", Deny}, // the deny rule sees where it leads
		{"rm", d + "/secret/in/sub", Deny},   // and as written
	} {
		args := []byte(`{"path":"` + tc.path + `"}`)
		if got := local.Decide("fs", tc.tool, anyObject(t), args); got.Outcome != tc.want {
			t.Errorf("local %s %s: %v %q; want %v", tc.tool, tc.path, got.Outcome, got.Message, tc.want)
		}
	}
	// The same gate decides a remote server's paths as written.
	if got := local.Decide("remote", "read", anyObject(t), []byte(`{"path":"`+d+`/allowed/out/key"}`)); got.Outcome != Allow {
		t.Errorf("remote server's path decided on this machine's links: %v", got.Outcome)
	}
	for _, tc := range []struct {
		uri  string
		want Outcome
	}{
		{"file://" + d + "/allowed/sub/a.txt", Allow},
		{"file://" + d + "/allowed/out/key", Deny},
		{"file://" + d + "/allowed/%6fut/key", Deny}, // percent-encoded "o"
	} {
		if got := local.DecideResource("fs", tc.uri); got.Outcome != tc.want {
			t.Errorf("resource %s: %v %q; want %v", tc.uri, got.Outcome, got.Message, tc.want)
		}
	}
	if got := local.DecideResource("remote", "file://"+d+"/allowed/out/key"); got.Outcome != Allow {
		t.Errorf("remote resource decided on this machine's links: %v", got.Outcome)
	}
}
