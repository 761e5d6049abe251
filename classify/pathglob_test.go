package classify

import (
	"errors"
	"strings"
	"testing"
)

func TestPathGlobMatch(t *testing.T) {
	tests := []struct {
		pat, arg string
		want     bool
	}{
		// ** matches zero or more segments: the directory itself and below.
		{"/work/scratch/**", "/work/scratch", true},
		{"/work/scratch/**", "/work/scratch/", true},
		{"/work/scratch/**", "/work/scratch/a", true},
		{"/work/scratch/**", "/work/scratch/a/b/c.txt", true},
		{"/work/scratch/**", "/work/scratch/x/", true},
		{"/work/scratch/**", "/work/scratch/./x", true},
		{"/work/scratch/**", "//work//scratch//x", true},
		{"/work/scratch/**", "/work/scratch/a/../b", true},
		{"/work/scratch/**", "/work/scratchpad", false},
		{"/work/scratch/**", "/work/scratchpad/x", false},
		{"/work/scratch/**", "/work", false},
		{"/work/scratch/**", "/", false},
		// traversal: cleaned first
		{"/work/scratch/**", "/work/scratch/../../etc/passwd", false},
		{"/work/scratch/**", "/work/scratch/..", false},
		{"/work/scratch/**", "/work/scratch/a/../../x", false},
		{"/work/scratch/**", "/work/scratch/../scratch/ok", true},
		{"/work/scratch/**", "/../work/scratch/x", true}, // ".." at root stays at root
		// not an absolute path: never matches
		{"/work/scratch/**", "work/scratch/x", false},
		{"/work/scratch/**", "./work/scratch/x", false},
		{"/**", "", false},
		{"/**", "relative", false},
		{"/work/scratch/**", "/work/scratch/x\x00", false},
		{"/**", "/\x00", false},
		{"/work/scratch/**", "file:///work/scratch/x", false},
		// backslash is an ordinary character
		{"/work/scratch/**", `/work/scratch\..\..\etc`, false},
		{"/work/scratch/**", `/work/scratch/..\..\etc`, true},
		{"/work/*", `/work/a\b`, true},
		// strictly below
		{"/work/scratch/*/**", "/work/scratch", false},
		{"/work/scratch/*/**", "/work/scratch/a", true},
		{"/work/scratch/*/**", "/work/scratch/a/b", true},
		// single-segment wildcards
		{"/work/*", "/work/a", true},
		{"/work/*", "/work/.hidden", true},
		{"/work/*", "/work", false},
		{"/work/*", "/work/a/b", false},
		{"/work/*.txt", "/work/a.txt", true},
		{"/work/*.txt", "/work/a/b.txt", false},
		{"/work/?", "/work/é", true},
		{"/work/?", "/work/ab", false},
		{"/work/[ab]", "/work/b", true},
		{"/work/[ab]", "/work/c", false},
		{`/work/\*`, "/work/*", true},
		{`/work/\*`, "/work/a", false},
		// ** in the middle and several **
		{"/a/**/b", "/a/b", true},
		{"/a/**/b", "/a/x/y/b", true},
		{"/a/**/b", "/a/x/y/c", false},
		{"/a/**/b/**", "/a/x/b/y/z", true},
		{"/**/b", "/b", true},
		{"/**/b", "/x/b", true},
		{"/**/b", "/x/bb", false},
		{"/a/**/**/b", "/a/b", true},
		// root and exact
		{"/", "/", true},
		{"/", "/a", false},
		{"/", "//", true},
		{"/", "/a/..", true},
		{"/**", "/", true},
		{"/**", "/anything/at/all", true},
		{"/etc/passwd", "/etc/passwd", true},
		{"/etc/passwd", "/etc/passwd/", true},
		{"/etc/passwd", "/etc/passwdx", false},
	}
	for _, tt := range tests {
		pg, err := compilePathGlob(tt.pat)
		if err != nil {
			t.Errorf("compilePathGlob(%q): %v", tt.pat, err)
			continue
		}
		if got := pg.match(tt.arg); got != tt.want {
			t.Errorf("path %q match %q = %v, want %v", tt.pat, tt.arg, got, tt.want)
		}
	}
}

func TestPathGlobSyntax(t *testing.T) {
	bad := []struct{ pat, msg string }{
		{"", "not absolute"},
		{"a/**", "not absolute"},
		{"**", "not absolute"},
		{"/a/../b", `not clean (path.Clean gives "/b")`},
		{"/a/./b", "not clean"},
		{"/a/", "not clean"},
		{"//a", "not clean"},
		{"/a/b/..", "not clean"},
		{"/a**", `"**" must be a whole segment`},
		{"/a/b**/c", `"**" must be a whole segment`},
		{"/a/***", `"**" must be a whole segment`},
		{"/a/[", "syntax error in pattern"},
		{"/a/[/]", "syntax error in pattern"},
		{`/a\`, "syntax error in pattern"},
		{"/a/[!x]", "ambiguous"},
	}
	for _, tt := range bad {
		_, err := compilePathGlob(tt.pat)
		if err == nil || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("compilePathGlob(%q) = %v, want error containing %q", tt.pat, err, tt.msg)
		}
		if err != nil && strings.Contains(tt.msg, "syntax") && !errors.Is(err, errBadPattern) {
			t.Errorf("compilePathGlob(%q) = %v, want errBadPattern", tt.pat, err)
		}
	}
	for _, p := range []string{"/", "/**", "/a/**/b", "/a/*", "/a/[bc]/?", `/a/\*`} {
		if _, err := compilePathGlob(p); err != nil {
			t.Errorf("compilePathGlob(%q): %v", p, err)
		}
	}
}
