package fspath

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestResolve(t *testing.T) {
	d, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"allowed/sub", "secret"} {
		if err := os.MkdirAll(filepath.Join(d, dir), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range []string{"allowed/a.txt", "secret/key", "x"} {
		if err := os.WriteFile(filepath.Join(d, f), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	link := func(target, name string) {
		if err := os.Symlink(target, filepath.Join(d, name)); err != nil {
			t.Fatal(err)
		}
	}
	link("../secret", "allowed/dir")          // relative, to a directory
	link(d+"/secret/key", "allowed/abs")      // absolute, to a file
	link("sub/../../secret", "allowed/climb") // a target that climbs itself
	link("loop2", "allowed/loop1")            // a loop
	link("loop1", "allowed/loop2")            //
	link("dir/key", "allowed/chain")          // a link through a link
	for _, tc := range []struct{ in, want string }{
		{d + "/allowed/a.txt", d + "/allowed/a.txt"},
		{d + "/allowed/./sub/../a.txt", d + "/allowed/a.txt"},
		{d + "/allowed/dir/key", d + "/secret/key"},
		{d + "/allowed/dir", d + "/secret"},
		{d + "/allowed/abs", d + "/secret/key"},
		{d + "/allowed/climb/key", d + "/secret/key"},
		{d + "/allowed/chain", d + "/secret/key"},
		// The link is followed before "..": the kernel climbs from where it
		// points (d/secret/.. is d), not from allowed/.
		{d + "/allowed/dir/../x", d + "/x"},
		{d + "//allowed//dir/key", d + "/secret/key"},
		// Past the longest existing prefix, the rest is joined as text.
		{d + "/allowed/dir/new/file", d + "/secret/new/file"},
		{d + "/allowed/none/../a.txt", d + "/allowed/a.txt"},
		{"/", "/"},
	} {
		got, err := Resolve(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("Resolve(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
	for _, tc := range []struct{ in, why string }{
		{d + "/allowed/loop1", "symbolic links"},
		{d + "/allowed/a.txt/x", "not a directory"},
		{"relative/path", "not an absolute path"},
		{"/a\x00b", "not an absolute path"},
	} {
		if got, err := Resolve(tc.in); err == nil || !strings.Contains(err.Error(), tc.why) {
			t.Errorf("Resolve(%q) = %q, %v; want an error saying %q", tc.in, got, err, tc.why)
		}
	}
}
