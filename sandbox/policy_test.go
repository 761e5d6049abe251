package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestDigest_SameForTheSamePolicyInAnyOrder(t *testing.T) {
	a := Policy{Read: []string{"/b", "/a", "/a"}, Write: []string{"/w"}, Network: Network{Mode: NetPorts, Connect: []uint16{443, 80}}}
	b := Policy{Read: []string{"/a", "/b"}, Write: []string{"/w"}, Network: Network{Mode: NetPorts, Connect: []uint16{80, 443, 80}}}
	if a.Digest() != b.Digest() || !strings.HasPrefix(a.Digest(), "sha256:") {
		t.Fatalf("digests differ: %s %s", a.Digest(), b.Digest())
	}
	for _, c := range []Policy{
		{Read: []string{"/a", "/b"}, Write: []string{"/w", "/x"}, Network: b.Network},
		{Read: []string{"/a", "/b"}, Write: []string{"/w"}, Network: Network{Mode: NetPorts, Connect: []uint16{80, 443}, UDP: true}},
		{Read: []string{"/a", "/b"}, Write: []string{"/w"}, Network: Network{Mode: NetAll}},
		{Read: []string{"/a", "/b"}, Write: []string{"/w"}, Network: b.Network, BestEffort: true},
	} {
		if c.Digest() == b.Digest() {
			t.Errorf("%+v has the digest of %+v", c, b)
		}
	}
}

func TestEncodeDecode_RoundTripAndRefusals(t *testing.T) {
	p := Policy{Read: []string{"/r"}, Write: []string{"/w"}, Network: Network{Mode: NetPorts, Connect: []uint16{443}, Bind: []uint16{8080}, UDP: true}, BestEffort: true}
	got, err := Decode(p.Encode())
	if err != nil || got.Digest() != p.Digest() {
		t.Fatalf("round trip: %+v %v", got, err)
	}
	for _, bad := range []string{`{"network":{"mode":"some"}}`, `{"read":["rel"],"network":{"mode":"none"}}`, `{"write":["rel"],"network":{"mode":"none"}}`, `not json`} {
		if _, err := Decode(bad); err == nil {
			t.Errorf("%s: decoded", bad)
		}
	}
}

// The runtime defaults: the system's read-only paths, the program's own
// directory (and its installation's lib), the node_modules tree of a
// script argument, the package caches under home; never a write path,
// never a directory argument (what the server is given to work on).
func TestEffective_RuntimeDefaults(t *testing.T) {
	dir := t.TempDir()
	home := filepath.Join(dir, "home")
	prefix := filepath.Join(dir, "node")
	nm := filepath.Join(dir, "app", "node_modules")
	script := filepath.Join(nm, "@scope", "server", "dist", "index.js")
	work := filepath.Join(dir, "work")
	for _, d := range []string{filepath.Join(home, ".npm"), filepath.Join(prefix, "bin"), filepath.Join(prefix, "lib"), filepath.Dir(script), work} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{filepath.Join(prefix, "bin", "node"), script} {
		if err := os.WriteFile(f, nil, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	user := Policy{Read: []string{"/data"}, Write: []string{"/data/out"}, Network: Network{Mode: NetNone}}
	p := Effective(user, filepath.Join(prefix, "bin", "node"), []string{script, work, "--flag"}, home)
	for _, want := range []string{"/data", "/usr", filepath.Join(home, ".npm"), filepath.Join(prefix, "bin"), filepath.Join(prefix, "lib"), nm} {
		if !slices.Contains(p.Read, want) {
			t.Errorf("read has no %s: %v", want, p.Read)
		}
	}
	if slices.Contains(p.Read, work) || slices.Contains(p.Read, home) {
		t.Errorf("read has the directory argument or home: %v", p.Read)
	}
	if !slices.Equal(p.Write, []string{"/data/out"}) {
		t.Errorf("write %v, want only the configured one", p.Write)
	}
	if !slices.Equal(user.Read, []string{"/data"}) {
		t.Errorf("the configured policy was changed: %v", user.Read)
	}
}

func TestForCommand_FindsTheProgramAndPlacesRelativePaths(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bin", "srv"), nil, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "server.py"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	program, eff, err := ForCommand(Policy{Network: Network{Mode: NetNone}}, []string{"./bin/srv", "server.py"}, dir, "")
	if err != nil || program != filepath.Join(dir, "bin", "srv") {
		t.Fatalf("program %q, %v", program, err)
	}
	if !slices.Contains(eff.Read, filepath.Join(dir, "bin")) || !slices.Contains(eff.Read, dir) {
		t.Errorf("read %v: want the program's and the script's directories", eff.Read)
	}
	if _, _, err := ForCommand(Policy{}, []string{"no-such-program-here"}, "", ""); err == nil {
		t.Error("a program not on PATH was accepted")
	}
}

// A program or script in a shared or wide directory ($HOME, /tmp, /) adds
// only itself: the defaults never open the home directory.
func TestEffective_NeverOpensHomeOrTmp(t *testing.T) {
	home := t.TempDir()
	script := filepath.Join(home, "server.py")
	prog := filepath.Join(home, "srv")
	for _, f := range []string{script, prog} {
		if err := os.WriteFile(f, nil, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	p := Effective(Policy{Network: Network{Mode: NetNone}}, prog, []string{script}, home)
	if slices.Contains(p.Read, home) || slices.Contains(p.Read, filepath.Dir(home)) {
		t.Errorf("read opens home or above: %v", p.Read)
	}
	if !slices.Contains(p.Read, script) || !slices.Contains(p.Read, prog) {
		t.Errorf("read lacks the program or the script itself: %v", p.Read)
	}
	if broad("/opt/app", home) || !broad("/tmp", home) || !broad("/", home) {
		t.Error("broad misjudges")
	}
}
