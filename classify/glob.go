package classify

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// errBadPattern is the error every malformed glob wraps; its text matches
// path.ErrBadPattern's.
var errBadPattern = errors.New("syntax error in pattern")

// glob is a compiled whole-string glob (see the package doc for its syntax).
type glob struct {
	src  string
	toks []gtok
}

type gkind uint8

const (
	gLit   gkind = iota // lit, bytewise
	gOne                // '?': exactly one rune
	gStar               // '*': any run of runes (consecutive stars are merged)
	gClass              // '[...]': one rune in (or, negated, not in) ranges
)

type gtok struct {
	kind   gkind
	neg    bool
	lit    string
	ranges []runeRange
}

type runeRange struct{ lo, hi rune }

func badGlob(detail string) error {
	if detail == "" {
		return errBadPattern
	}
	return fmt.Errorf("%w: %s", errBadPattern, detail)
}

// compileGlob parses p. The error does not name the pattern; callers do.
func compileGlob(p string) (*glob, error) {
	if !utf8.ValidString(p) {
		return nil, badGlob("not valid UTF-8")
	}
	g := &glob{src: p}
	var lit strings.Builder
	flush := func() {
		if lit.Len() > 0 {
			g.toks = append(g.toks, gtok{kind: gLit, lit: lit.String()})
			lit.Reset()
		}
	}
	for i := 0; i < len(p); {
		switch p[i] {
		case '*':
			flush()
			if n := len(g.toks); n == 0 || g.toks[n-1].kind != gStar {
				g.toks = append(g.toks, gtok{kind: gStar})
			}
			i++
		case '?':
			flush()
			g.toks = append(g.toks, gtok{kind: gOne})
			i++
		case '[':
			flush()
			t, n, err := parseClass(p[i+1:])
			if err != nil {
				return nil, err
			}
			g.toks = append(g.toks, t)
			i += 1 + n
		case '\\':
			i++
			if i == len(p) {
				return nil, badGlob("")
			}
			_, n := utf8.DecodeRuneInString(p[i:])
			lit.WriteString(p[i : i+n])
			i += n
		default:
			_, n := utf8.DecodeRuneInString(p[i:])
			lit.WriteString(p[i : i+n])
			i += n
		}
	}
	flush()
	return g, nil
}

// parseClass parses a class body (after '[') and returns the token and the
// number of bytes consumed, closing ']' included.
func parseClass(s string) (gtok, int, error) {
	t := gtok{kind: gClass}
	j := 0
	if j < len(s) && s[j] == '!' {
		return t, 0, badGlob(`"[!" is ambiguous: write "[^" to negate or "[\!" for a literal '!'`)
	}
	if j < len(s) && s[j] == '^' {
		t.neg = true
		j++
	}
	for {
		if j < len(s) && s[j] == ']' && len(t.ranges) > 0 {
			return t, j + 1, nil
		}
		lo, n, err := classRune(s[j:])
		if err != nil {
			return t, 0, err
		}
		j += n
		hi := lo
		if j < len(s) && s[j] == '-' {
			hi, n, err = classRune(s[j+1:])
			if err != nil {
				return t, 0, err
			}
			j += 1 + n
		}
		if lo > hi {
			return t, 0, badGlob(fmt.Sprintf("reversed range %q-%q", lo, hi))
		}
		t.ranges = append(t.ranges, runeRange{lo, hi})
	}
}

// classRune reads one (possibly escaped) rune of a class, as path.Match's
// getEsc does: '-' and ']' must be escaped, and the class must go on.
func classRune(s string) (rune, int, error) {
	if len(s) == 0 || s[0] == '-' || s[0] == ']' {
		return 0, 0, badGlob("")
	}
	esc := 0
	if s[0] == '\\' {
		esc = 1
		if len(s) == 1 {
			return 0, 0, badGlob("")
		}
	}
	r, n := utf8.DecodeRuneInString(s[esc:])
	if esc+n == len(s) { // unterminated class
		return 0, 0, badGlob("")
	}
	return r, esc + n, nil
}

// match reports whether the whole of s matches g.
func (g *glob) match(s string) bool {
	toks := g.toks
	pi, si := 0, 0
	starPi, starSi := -1, 0
	for {
		if pi < len(toks) {
			t := &toks[pi]
			if t.kind == gStar {
				if pi == len(toks)-1 {
					return true // a trailing star takes the rest
				}
				starPi, starSi = pi, si
				pi++
				continue
			}
			if n, ok := t.matchAt(s[si:]); ok {
				pi++
				si += n
				continue
			}
		} else if si == len(s) {
			return true
		}
		// Mismatch: let the last star take one more rune and retry.
		if starPi < 0 || starSi >= len(s) {
			return false
		}
		_, n := utf8.DecodeRuneInString(s[starSi:])
		starSi += n
		pi, si = starPi+1, starSi
	}
}

// matchAt matches a non-star token at the start of s and returns its length.
func (t *gtok) matchAt(s string) (int, bool) {
	switch t.kind {
	case gLit:
		return len(t.lit), strings.HasPrefix(s, t.lit)
	case gOne:
		if s == "" {
			return 0, false
		}
		_, n := utf8.DecodeRuneInString(s)
		return n, true
	case gClass:
		if s == "" {
			return 0, false
		}
		r, n := utf8.DecodeRuneInString(s)
		in := false
		for _, rg := range t.ranges {
			if rg.lo <= r && r <= rg.hi {
				in = true
				break
			}
		}
		return n, in != t.neg
	}
	return 0, false
}

// literal returns the only string g matches, if g has no wildcard.
func (g *glob) literal() (string, bool) {
	switch len(g.toks) {
	case 0:
		return "", true
	case 1:
		if g.toks[0].kind == gLit {
			return g.toks[0].lit, true
		}
	}
	return "", false
}

// matchesAll reports whether g matches every string ("*", "**", ...).
func (g *glob) matchesAll() bool {
	return len(g.toks) == 1 && g.toks[0].kind == gStar
}

// covers reports, conservatively, whether every string h matches also
// matches g: g matches everything, the patterns are identical, or h is a
// literal that g matches. false means "not known", not "no".
func (g *glob) covers(h *glob) bool {
	if g.matchesAll() || g.src == h.src {
		return true
	}
	if s, ok := h.literal(); ok {
		return g.match(s)
	}
	return false
}
