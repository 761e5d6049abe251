package classify

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// Predicate is one condition on one argument, addressed by the JSON pointer
// that keys it in Rule.When. Exactly one field must be set.
type Predicate struct {
	// Equals holds when the argument equals this TOML scalar (string,
	// int64, float64 or bool); see the package doc for number equality.
	Equals any `toml:"equals"`
	// OneOf holds when the argument equals one of these scalars.
	OneOf []any `toml:"one_of"`
	// Prefix holds when the argument is a string starting with it.
	Prefix *string `toml:"prefix"`
	// Glob holds when the whole string argument matches the glob.
	Glob *string `toml:"glob"`
	// Regex holds when the whole string argument matches the RE2 regexp
	// (it is anchored as ^(?:re)$).
	Regex *string `toml:"regex"`
	// Path holds when the string argument is an absolute path whose cleaned
	// form matches the path glob.
	Path *string `toml:"path"`
	// MaxLength holds when the argument is a string of at most this many
	// runes.
	MaxLength *int64 `toml:"max_length"`
	// Absent, when true, holds only when the pointer resolves to nothing;
	// when false, only when it resolves to something (null included).
	Absent *bool `toml:"absent"`
}

type predKind uint8

const (
	pEquals predKind = iota + 1
	pOneOf
	pPrefix
	pGlob
	pRegex
	pPath
	pMaxLength
	pAbsent
)

// kinds lists the names of the fields set in p, in declaration order.
func (p Predicate) kinds() (names []string, kinds []predKind) {
	add := func(set bool, name string, k predKind) {
		if set {
			names = append(names, name)
			kinds = append(kinds, k)
		}
	}
	add(p.Equals != nil, "equals", pEquals)
	add(p.OneOf != nil, "one_of", pOneOf)
	add(p.Prefix != nil, "prefix", pPrefix)
	add(p.Glob != nil, "glob", pGlob)
	add(p.Regex != nil, "regex", pRegex)
	add(p.Path != nil, "path", pPath)
	add(p.MaxLength != nil, "max_length", pMaxLength)
	add(p.Absent != nil, "absent", pAbsent)
	return names, kinds
}

// pred is a compiled Predicate together with its pointer.
type pred struct {
	ptr     pointer
	kind    predKind
	values  []scalar // equals (one) or one_of
	prefix  string
	glob    *glob
	re      *regexp.Regexp
	path    *pathGlob
	maxLen  int64
	absent  bool
	wantStr bool // the predicate needs a string argument
}

// compilePred compiles p; its error does not name the rule or the pointer.
func compilePred(ptrText string, p Predicate) (pred, error) {
	var c pred
	ptr, err := parsePointer(ptrText)
	if err != nil {
		return c, err
	}
	c.ptr = ptr
	names, kinds := p.kinds()
	switch len(kinds) {
	case 0:
		return c, errors.New("no condition: set exactly one of equals, one_of, prefix, glob, regex, path, max_length, absent")
	case 1:
	default:
		return c, fmt.Errorf("several conditions (%s): set exactly one", strings.Join(names, ", "))
	}
	c.kind = kinds[0]
	switch c.kind {
	case pEquals:
		v, err := configScalar(p.Equals)
		if err != nil {
			return c, fmt.Errorf("equals: %w", err)
		}
		c.values = []scalar{v}
	case pOneOf:
		if len(p.OneOf) == 0 {
			return c, errors.New("one_of: empty list never matches")
		}
		var errs []error
		for i, e := range p.OneOf {
			v, err := configScalar(e)
			if err != nil {
				errs = append(errs, fmt.Errorf("one_of[%d]: %w", i, err))
				continue
			}
			c.values = append(c.values, v)
		}
		if err := errors.Join(errs...); err != nil {
			return c, err
		}
	case pPrefix:
		c.prefix, c.wantStr = *p.Prefix, true
	case pGlob:
		g, err := compileGlob(*p.Glob)
		if err != nil {
			return c, fmt.Errorf("glob: bad glob %q: %w", *p.Glob, err)
		}
		c.glob, c.wantStr = g, true
	case pRegex:
		if _, err := regexp.Compile(*p.Regex); err != nil {
			return c, fmt.Errorf("regex: %w", err)
		}
		re, err := regexp.Compile(`^(?:` + *p.Regex + `)$`)
		if err != nil {
			return c, fmt.Errorf("regex: %w", err)
		}
		c.re, c.wantStr = re, true
	case pPath:
		pg, err := compilePathGlob(*p.Path)
		if err != nil {
			return c, fmt.Errorf("path: bad pattern %q: %w", *p.Path, err)
		}
		c.path, c.wantStr = pg, true
	case pMaxLength:
		if *p.MaxLength < 0 {
			return c, fmt.Errorf("max_length: %d is negative", *p.MaxLength)
		}
		c.maxLen, c.wantStr = *p.MaxLength, true
	case pAbsent:
		c.absent = *p.Absent
	}
	return c, nil
}

// Reasons a predicate did not hold, for Explain. They never quote the
// argument, which may be hostile.
const (
	whyMissing   = "missing"
	whyPresent   = "present"
	whyNotString = "not a string"
	whyNotScalar = "not a string, number or boolean"
	whyNoMatch   = "no match"
)

// eval reports whether c holds in doc, and if not, why.
func (c *pred) eval(doc any) (bool, string) {
	v, found := c.ptr.resolve(doc)
	if c.kind == pAbsent {
		if found == c.absent {
			if found {
				return false, whyPresent
			}
			return false, whyMissing
		}
		return true, ""
	}
	if !found {
		return false, whyMissing
	}
	if c.wantStr {
		s, ok := v.(string)
		if !ok {
			return false, whyNotString
		}
		var hold bool
		switch c.kind {
		case pPrefix:
			hold = strings.HasPrefix(s, c.prefix)
		case pGlob:
			hold = c.glob.match(s)
		case pRegex:
			hold = c.re.MatchString(s)
		case pPath:
			hold = c.path.match(s)
		case pMaxLength:
			hold = int64(utf8.RuneCountInString(s)) <= c.maxLen
		}
		if !hold {
			return false, whyNoMatch
		}
		return true, ""
	}
	// equals, one_of
	a, ok := argScalar(v)
	if !ok {
		return false, whyNotScalar
	}
	for _, w := range c.values {
		if a.equal(w) {
			return true, ""
		}
	}
	return false, whyNoMatch
}

// scalarOnly reports whether c can hold only for a string, number or
// boolean (so no pointer below c.ptr can resolve when it holds).
func (c *pred) scalarOnly() bool {
	return c.kind != pAbsent
}
