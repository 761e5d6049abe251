package classify

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// ruleKind is what a rule is about: tools, prompts or resources.
type ruleKind uint8

const (
	kindTool ruleKind = iota
	kindPrompt
	kindResource
)

func (k ruleKind) String() string {
	switch k {
	case kindPrompt:
		return "prompt"
	case kindResource:
		return "resource"
	}
	return "tool"
}

// compileTarget compiles the one of Tool, Prompt and Resource that r names
// into c and returns the rule's kind. None, or more than one, is an error.
func compileTarget(r Rule, c *compiledRule, bad func(string, error)) ruleKind {
	var given []string
	for _, f := range []struct{ name, v string }{{"tool", r.Tool}, {"prompt", r.Prompt}, {"resource", r.Resource}} {
		if f.v != "" {
			given = append(given, f.name)
		}
	}
	switch {
	case len(given) > 1:
		bad(given[1], fmt.Errorf("a rule names exactly one of tool, prompt and resource (this one names %s)", strings.Join(given, " and ")))
		return kindTool
	case r.Prompt != "":
		c.name = compileName(r.Prompt, "prompt", bad)
		return kindPrompt
	case r.Resource != "":
		u, err := compileURIPattern(r.Resource)
		if err != nil {
			bad("resource", fmt.Errorf("bad pattern %q: %w", r.Resource, err))
		}
		c.uri = u
		return kindResource
	}
	c.name = compileName(r.Tool, "tool", bad) // reports an empty tool
	return kindTool
}

// contentClass is the class of a prompt or resource rule: read when left
// out. A rule may name another (a resource template that queries a remote
// service is "network"): the class is what flows check a read against.
func contentClass(r Rule, bad func(string, error)) Class {
	if r.Class == "" {
		return Read
	}
	c, err := ParseClass(string(r.Class))
	if err != nil {
		bad("class", err)
		return Read
	}
	return c
}

// ExposablePrompt reports the first prompt rule whose server and prompt
// globs match, ignoring When. A prompt for which this is false must never be
// shown to the host.
func (r *Rules) ExposablePrompt(server, prompt string) (Match, bool) {
	return r.exposable(kindPrompt, server, prompt)
}

// DecidePrompt returns the first prompt rule whose server glob, prompt glob
// and When predicates all hold for args, the prompts/get arguments decoded
// as for Decide. ok is false when no rule matches: the caller fails closed.
func (r *Rules) DecidePrompt(server, prompt string, args any) (Match, bool) {
	m, ok, _ := r.decide(kindPrompt, server, prompt, args, false)
	return m, ok
}

// DecideResource returns the first resource rule whose server glob and URI
// pattern match uri (see the package doc for how URIs are matched). ok is
// false when no rule matches: the caller fails closed. A resource listed
// by its server is exposable when this is true for its URI.
func (r *Rules) DecideResource(server, uri string) (Match, bool) {
	if r == nil {
		return Match{}, false
	}
	norm, ok := normalURI(uri)
	if !ok {
		return Match{}, false
	}
	for i := range r.rules {
		c := &r.rules[i]
		if c.kind == kindResource && c.server.match(server) && c.uri.match(norm) {
			return c.match(i), true
		}
	}
	return Match{}, false
}

// ExposableTemplate reports the first resource rule whose pattern matches
// the text of a resource template (RFC 6570) read as if it were a URI: a
// rule "file:///work/**" exposes the template "file:///work/{+path}". It
// only decides whether the template is shown; every URI read through it is
// decided by DecideResource on the URI actually read.
func (r *Rules) ExposableTemplate(server, uriTemplate string) (Match, bool) {
	return r.DecideResource(server, uriTemplate)
}

// uriPattern is a compiled resource pattern. A file: pattern
// ("file:///abs/path/**") is a path glob over the normal form's path;
// any other pattern is a glob over the whole normal form.
type uriPattern struct {
	src  string
	path *pathGlob // file: patterns
	glob *glob     // every other pattern
}

// compileURIPattern parses p. The error does not name the pattern.
func compileURIPattern(p string) (*uriPattern, error) {
	u := &uriPattern{src: p}
	scheme, rest, ok := cutScheme(p)
	if ok && strings.EqualFold(scheme, "file") {
		if !strings.HasPrefix(rest, "///") {
			return nil, errors.New(`a file: pattern is file:///ABSOLUTE/PATH/GLOB (three slashes, no host)`)
		}
		pg, err := compilePathGlob(rest[2:])
		if err != nil {
			return nil, err
		}
		u.path = pg
		return u, nil
	}
	if ok {
		p = strings.ToLower(scheme) + ":" + rest // schemes are case-insensitive
	}
	g, err := compileGlob(p)
	if err != nil {
		return nil, err
	}
	u.glob = g
	return u, nil
}

// match matches a URI already in normal form.
func (u *uriPattern) match(norm string) bool {
	if u.path != nil {
		p, ok := strings.CutPrefix(norm, "file://")
		return ok && u.path.matchClean(p)
	}
	return u.glob.match(norm)
}

// normalURI returns the form a URI is matched in: its scheme lowercased;
// for a file: URI, "file://" and its percent-decoded, cleaned absolute
// path, so "file:///work/a/%2e%2e/../etc/passwd" is "file:///etc/passwd".
// A file: URI with a host other than localhost, a query or fragment, a path
// that does not decode or is not absolute, or a NUL byte has no normal form
// and matches nothing. A string without a scheme is matched as it is.
func normalURI(uri string) (string, bool) {
	scheme, rest, ok := cutScheme(uri)
	if !ok {
		return uri, true
	}
	scheme = strings.ToLower(scheme)
	if scheme != "file" {
		return scheme + ":" + rest, true
	}
	if strings.ContainsAny(rest, "?#") {
		return "", false
	}
	if after, ok := strings.CutPrefix(rest, "//"); ok {
		host, path, found := strings.Cut(after, "/")
		if !found || host != "" && !strings.EqualFold(host, "localhost") {
			return "", false
		}
		rest = "/" + path
	}
	decoded, err := url.PathUnescape(rest)
	if err != nil {
		return "", false
	}
	clean, ok := cleanAbs(decoded)
	if !ok {
		return "", false
	}
	return "file://" + clean, true
}

// cutScheme splits a URI at its scheme (RFC 3986: a letter, then letters,
// digits, '+', '-' or '.', then ':').
func cutScheme(s string) (scheme, rest string, ok bool) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		case i > 0 && c == ':':
			return s[:i], s[i+1:], true
		default:
			return "", s, false
		}
	}
	return "", s, false
}
