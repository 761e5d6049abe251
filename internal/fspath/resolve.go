// Package fspath owns reading a path the way the kernel will: component by
// component from the raw text, following symbolic links where they are,
// before any lexical cleaning. Path rules check both this and the cleaned
// text, so a link inside an allowed tree that points out of it does not
// carry a call out with it.
package fspath

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"
)

// maxLinks is how many symbolic links one resolution follows, as Linux's
// ELOOP limit (40).
const maxLinks = 40

// Resolve returns the absolute path p names once every symbolic link along
// it is followed, as open(2) would walk it: "/allowed/link/../x" follows
// link first and then climbs from where it points. Components past the
// longest existing prefix cannot be followed and are joined lexically. A
// final component that is a symbolic link is followed too (open follows it
// unless told not to). p must be absolute; the error says why it could not
// be resolved (a loop, a component that is not a directory, no permission
// to look).
func Resolve(p string) (string, error) {
	if !strings.HasPrefix(p, "/") || strings.IndexByte(p, 0) >= 0 {
		return "", fmt.Errorf("fspath: %q is not an absolute path", p)
	}
	rest := splitPath(p)
	cur := "/"
	links := 0
	for len(rest) > 0 {
		c := rest[0]
		rest = rest[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			cur = path.Dir(cur) // cur holds no links, so its parent is the real one
			continue
		}
		next := path.Join(cur, c)
		fi, err := os.Lstat(next)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			// The longest existing prefix ends here: what follows cannot be
			// a link yet, and is joined as text.
			return path.Join(append([]string{next}, rest...)...), nil
		case err != nil:
			return "", fmt.Errorf("fspath: resolve %q: %w", p, err)
		case fi.Mode()&fs.ModeSymlink != 0:
			links++
			if links > maxLinks {
				return "", fmt.Errorf("fspath: resolve %q: more than %d symbolic links", p, maxLinks)
			}
			target, err := os.Readlink(next)
			if err != nil {
				return "", fmt.Errorf("fspath: resolve %q: %w", p, err)
			}
			if strings.HasPrefix(target, "/") {
				cur = "/"
			}
			rest = append(splitPath(target), rest...)
		case len(rest) > 0 && !fi.IsDir() && hasComponent(rest):
			return "", fmt.Errorf("fspath: resolve %q: %s is not a directory", p, next)
		default:
			cur = next
		}
	}
	return cur, nil
}

func splitPath(p string) []string {
	return strings.Split(strings.Trim(p, "/"), "/")
}

// hasComponent reports whether rest names anything beyond "" and ".".
func hasComponent(rest []string) bool {
	for _, c := range rest {
		if c != "" && c != "." {
			return true
		}
	}
	return false
}
