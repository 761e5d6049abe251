package classify

import (
	"fmt"
	"path"
	"strings"
)

// pathGlob is a compiled path pattern: an absolute, clean pattern whose
// segments are "**" (zero or more segments) or a one-segment glob.
type pathGlob struct {
	src  string
	segs []*glob // nil stands for "**"
}

// compilePathGlob parses p. The error does not name the pattern; callers do.
func compilePathGlob(p string) (*pathGlob, error) {
	if !strings.HasPrefix(p, "/") {
		return nil, fmt.Errorf(`not absolute (must start with "/")`)
	}
	if c := path.Clean(p); c != p {
		return nil, fmt.Errorf("not clean (path.Clean gives %q)", c)
	}
	pg := &pathGlob{src: p}
	if p == "/" {
		return pg, nil
	}
	for seg := range strings.SplitSeq(p[1:], "/") {
		if seg == "**" {
			pg.segs = append(pg.segs, nil)
			continue
		}
		if strings.Contains(seg, "**") {
			return nil, badGlob(fmt.Sprintf(`"**" must be a whole segment, not part of %q`, seg))
		}
		g, err := compileGlob(seg)
		if err != nil {
			return nil, err
		}
		pg.segs = append(pg.segs, g)
	}
	return pg, nil
}

// cleanAbs returns path.Clean(s) if s is a usable absolute path: non-empty,
// starting with '/', without NUL bytes.
func cleanAbs(s string) (string, bool) {
	if !strings.HasPrefix(s, "/") || strings.IndexByte(s, 0) >= 0 {
		return "", false
	}
	return path.Clean(s), true
}

// match reports whether the argument s, once cleaned, matches pg.
func (pg *pathGlob) match(s string) bool {
	c, ok := cleanAbs(s)
	if !ok {
		return false
	}
	return pg.matchClean(c)
}

// matchClean matches a clean absolute path segment by segment, with "**" as
// a star over segments (the same single-backtrack algorithm as glob.match).
// Positions are byte offsets into rest; end means "no segment left".
func (pg *pathGlob) matchClean(c string) bool {
	rest := c[1:] // "" only for "/", which has no segments
	end := len(rest) + 1
	next := func(si int) (seg string, after int) {
		if j := strings.IndexByte(rest[si:], '/'); j >= 0 {
			return rest[si : si+j], si + j + 1
		}
		return rest[si:], end
	}
	pat := pg.segs
	pi, si := 0, 0
	if rest == "" {
		si = end
	}
	starPi, starSi := -1, 0
	for {
		if pi < len(pat) {
			if pat[pi] == nil {
				if pi == len(pat)-1 {
					return true // a trailing "**" takes the rest
				}
				starPi, starSi = pi, si
				pi++
				continue
			}
			if si < end {
				if seg, after := next(si); pat[pi].match(seg) {
					pi++
					si = after
					continue
				}
			}
		} else if si >= end {
			return true
		}
		// Mismatch: let the last "**" take one more segment and retry.
		if starPi < 0 || starSi >= end {
			return false
		}
		_, starSi = next(starSi)
		pi, si = starPi+1, starSi
	}
}
