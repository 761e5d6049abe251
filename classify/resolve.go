package classify

import (
	"net/url"
	"strings"
)

// Resolved returns args with every string a path predicate of a matching
// tool rule reads replaced by resolve(string), the path the server will
// actually open: the caller decides on both documents and keeps the
// stricter answer. Only the maps along those pointers are copied; args is
// not changed. Strings that are not absolute paths are left as they are
// (a path predicate never holds for them). classify does no I/O itself:
// resolve does it.
func (r *Rules) Resolved(server, tool string, args any, resolve func(string) (string, error)) (any, error) {
	if r == nil {
		return args, nil
	}
	out := args
	for i := range r.rules {
		c := &r.rules[i]
		if c.kind != kindTool || !c.server.match(server) || !c.name.match(tool) {
			continue
		}
		for j := range c.when {
			p := &c.when[j]
			if p.kind != pPath {
				continue
			}
			v, ok := p.ptr.resolve(out)
			s, isStr := v.(string)
			if !ok || !isStr || !strings.HasPrefix(s, "/") {
				continue
			}
			real, err := resolve(s)
			if err != nil {
				return nil, err
			}
			if real != s {
				out = p.ptr.replace(out, real)
			}
		}
	}
	return out, nil
}

// replace returns doc with the value at p (which resolves) set to v,
// copying each map and slice along the way.
func (p pointer) replace(doc any, v any) any {
	return replaceAt(doc, p.toks, v)
}

func replaceAt(doc any, toks []string, v any) any {
	if len(toks) == 0 {
		return v
	}
	switch c := doc.(type) {
	case map[string]any:
		m := make(map[string]any, len(c))
		for k, e := range c {
			m[k] = e
		}
		m[toks[0]] = replaceAt(c[toks[0]], toks[1:], v)
		return m
	case []any:
		i, _ := arrayIndex(toks[0])
		a := append([]any(nil), c...)
		a[i] = replaceAt(c[i], toks[1:], v)
		return a
	}
	return doc
}

// FilePath returns the percent-decoded path of a file: URI as written,
// before any cleaning, for a caller that resolves it as the server will;
// ok is false for anything else, or a file: URI with no normal form.
func FilePath(uri string) (string, bool) {
	if _, ok := normalURI(uri); !ok {
		return "", false
	}
	scheme, rest, ok := cutScheme(uri)
	if !ok || !strings.EqualFold(scheme, "file") {
		return "", false
	}
	if after, ok := strings.CutPrefix(rest, "//"); ok {
		_, p, _ := strings.Cut(after, "/")
		rest = "/" + p
	}
	decoded, err := url.PathUnescape(rest)
	if err != nil {
		return "", false
	}
	return decoded, true
}

// Stricter returns the stricter of two decisions on one request: no match
// (ok false) over deny over ask over allow; a tie keeps a.
func Stricter(a Match, aok bool, b Match, bok bool) (Match, bool) {
	switch {
	case !aok || !bok:
		return Match{}, false
	case severity(b.Action) > severity(a.Action):
		return b, true
	}
	return a, true
}

func severity(a Action) int {
	switch a {
	case Allow:
		return 0
	case Ask:
		return 1
	}
	return 2 // deny, and anything unknown
}

// PathLiteral is the literal leading directory of a rule's path pattern:
// "/home/me/work" for "/home/me/work/**/*.md".
type PathLiteral struct {
	Rule    int // 1-based
	Pattern string
	Literal string
}

// PathLiterals lists the literal leading directory of every path pattern
// (path predicates and file: resource patterns), for a caller that checks
// them against the filesystem: a pattern written through a symbolic link
// never matches the resolved path a local server opens.
func (r *Rules) PathLiterals() []PathLiteral {
	if r == nil {
		return nil
	}
	var out []PathLiteral
	add := func(i int, pg *pathGlob) {
		lit := ""
		for _, g := range pg.segs {
			s, ok := "", false
			if g != nil {
				s, ok = g.literal()
			}
			if !ok {
				break
			}
			lit += "/" + s
		}
		if lit != "" {
			out = append(out, PathLiteral{Rule: i + 1, Pattern: pg.src, Literal: lit})
		}
	}
	for i := range r.rules {
		c := &r.rules[i]
		if c.uri != nil && c.uri.path != nil {
			add(i, c.uri.path)
		}
		for j := range c.when {
			if c.when[j].kind == pPath {
				add(i, c.when[j].path)
			}
		}
	}
	return out
}
