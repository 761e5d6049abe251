package classify

import (
	"encoding/json"
	"fmt"
	"math/big"
	"path"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mcp-guard/mcp-guard/internal/canon"
)

// globRegexp translates compiled glob tokens into an equivalent RE2
// expression, as an independent reference for the matcher. inSegment makes
// '*', '?' and classes stop at '/'.
func globRegexp(g *glob, inSegment bool) string {
	var b strings.Builder
	for _, t := range g.toks {
		switch t.kind {
		case gLit:
			b.WriteString(regexp.QuoteMeta(t.lit))
		case gOne:
			if inSegment {
				b.WriteString(`[^/]`)
			} else {
				b.WriteString(`(?s:.)`)
			}
		case gStar:
			if inSegment {
				b.WriteString(`[^/]*`)
			} else {
				b.WriteString(`(?s:.*)`)
			}
		case gClass:
			var rs []runeRange
			for _, r := range t.ranges {
				if inSegment && !t.neg && r.lo <= '/' && '/' <= r.hi {
					if r.lo < '/' {
						rs = append(rs, runeRange{r.lo, '/' - 1})
					}
					if r.hi > '/' {
						rs = append(rs, runeRange{'/' + 1, r.hi})
					}
					continue
				}
				rs = append(rs, r)
			}
			if inSegment && t.neg {
				rs = append(rs, runeRange{'/', '/'})
			}
			if len(rs) == 0 {
				b.WriteString(`[^\x00-\x{10FFFF}]`) // matches nothing
				continue
			}
			b.WriteString("[")
			if t.neg {
				b.WriteString("^")
			}
			for _, r := range rs {
				fmt.Fprintf(&b, `\x{%x}-\x{%x}`, r.lo, r.hi)
			}
			b.WriteString("]")
		}
	}
	return b.String()
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func FuzzGlob(f *testing.F) {
	for _, s := range [][2]string{
		{"read_*", "read_file"}, {"*", ""}, {"a*b*c", "aXbYc"}, {"[a-c]?", "b!"},
		{"[^x]*", "yz"}, {`\*`, "*"}, {"read_[*", "x"}, {"[!a]", "b"}, {"[]a]", "a"},
		{"[z-a]", "m"}, {"*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaa"}, {"?é", "xé"}, {"[é-ü]", "ö"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, s string) {
		g, err := compileGlob(pattern)
		_, pmErr := path.Match(pattern, "")
		if err != nil {
			if pmErr == nil {
				msg := err.Error()
				if !strings.Contains(msg, "ambiguous") && !strings.Contains(msg, "reversed range") &&
					!strings.Contains(msg, "not valid UTF-8") {
					t.Fatalf("compileGlob(%q) = %v, but path.Match accepts it", pattern, err)
				}
			}
			return
		}
		if pmErr != nil {
			t.Fatalf("compileGlob(%q) accepted what path.Match refuses: %v", pattern, pmErr)
		}
		got := g.match(s)
		if utf8.ValidString(s) {
			re := regexp.MustCompile(`^(?:` + globRegexp(g, false) + `)$`)
			if want := re.MatchString(s); got != want {
				t.Fatalf("glob %q match %q = %v, regexp %s says %v", pattern, s, got, re, want)
			}
		}
		if isASCII(s) && !strings.Contains(s, "/") {
			if want, _ := path.Match(pattern, s); got != want {
				t.Fatalf("glob %q match %q = %v, path.Match says %v", pattern, s, got, want)
			}
		}
		if lit, ok := g.literal(); ok && got != (s == lit) {
			t.Fatalf("literal glob %q (%q) match %q = %v", pattern, lit, s, got)
		}
	})
}

// literalSegments returns the leading segments of an absolute path pattern
// that hold no glob syntax at all, and whether every segment is literal.
func literalSegments(pattern string) ([]string, bool) {
	if pattern == "/" {
		return nil, true
	}
	var out []string
	for _, seg := range strings.Split(pattern[1:], "/") {
		if strings.ContainsAny(seg, `*?[\`) {
			return out, false
		}
		out = append(out, seg)
	}
	return out, true
}

func FuzzPathGlob(f *testing.F) {
	for _, s := range [][2]string{
		{"/work/scratch/**", "/work/scratch/../../etc/passwd"},
		{"/work/scratch/**", "/work/scratch"},
		{"/work/scratch/**", "/work/scratch/x/"},
		{"/work/scratch/*/**", "/work/scratch/a/b"},
		{"/a/**/b", "/a/x/y/b"},
		{"/**", "relative/path"},
		{"/", "/"},
		{"/etc/passwd", "//etc//passwd/."},
		{"/w/[a-c]?", "/w/b!"},
		{"/w/*.txt", "/w/..txt"},
		{"/w/**/**/x", "/w/x"},
		{"a/**", "/a/b"},
		{"/a/../b", "/b"},
		{"/a/**", "/a/\x00"},
		{`/a/\*`, `/a/*`},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, pattern, arg string) {
		pg, err := compilePathGlob(pattern)
		if err != nil {
			return
		}
		if pattern == "" || pattern[0] != '/' || path.Clean(pattern) != pattern {
			t.Fatalf("compilePathGlob accepted %q", pattern)
		}
		got := pg.match(arg)
		c, usable := cleanAbs(arg)
		if !usable {
			if got {
				t.Fatalf("%q matched unusable path %q", pattern, arg)
			}
			return
		}
		if strings.Contains(arg, "\x00") || !strings.HasPrefix(arg, "/") {
			t.Fatalf("cleanAbs accepted %q", arg)
		}
		if got != pg.match(c) {
			t.Fatalf("%q: match(%q) != match(clean %q)", pattern, arg, c)
		}

		// Reference: the same pattern as a regexp over the cleaned path.
		if utf8.ValidString(c) {
			var b strings.Builder
			b.WriteString("^")
			for _, seg := range pg.segs {
				if seg == nil {
					b.WriteString(`(?:/[^/]+)*`)
				} else {
					b.WriteString("/" + globRegexp(seg, true))
				}
			}
			b.WriteString("$")
			subject := c
			if c == "/" {
				subject = ""
			}
			if want := regexp.MustCompile(b.String()).MatchString(subject); got != want {
				t.Fatalf("path %q match %q (clean %q) = %v, regexp %s says %v", pattern, arg, c, got, b.String(), want)
			}
		}

		if !got {
			return
		}
		// Traversal invariants: a match is on a cleaned absolute path with
		// no ".." segment, below the pattern's literal directory prefix.
		if c != "/" && slicesContains(strings.Split(c[1:], "/"), "..") {
			t.Fatalf("matched path %q still has a .. segment", c)
		}
		lits, all := literalSegments(pattern)
		var segs []string
		if c != "/" {
			segs = strings.Split(c[1:], "/")
		}
		if len(segs) < len(lits) {
			t.Fatalf("%q matched %q, shorter than its literal prefix %q", pattern, c, lits)
		}
		for i, l := range lits {
			if segs[i] != l {
				t.Fatalf("%q matched %q outside its literal prefix %q", pattern, c, lits)
			}
		}
		prefix := "/" + strings.Join(lits, "/")
		if c != prefix && !strings.HasPrefix(c, strings.TrimSuffix(prefix, "/")+"/") {
			t.Fatalf("%q matched %q, not at or below %q", pattern, c, prefix)
		}
		if all && c != pattern {
			t.Fatalf("literal pattern %q matched a different path %q", pattern, c)
		}
	})
}

func slicesContains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

func FuzzPointer(f *testing.F) {
	for _, s := range [][2]string{
		{"/a/0/b", `{"a":[{"b":1}]}`},
		{"/a~1b", `{"a/b":"x"}`},
		{"/m~0n", `{"m~n":"x"}`},
		{"/a/-", `{"a":[1]}`},
		{"/a/01", `{"a":[1,2]}`},
		{"", `null`},
		{"a", `{}`},
		{"/~2", `{}`},
		{"/a/99999999999999999999", `{"a":[]}`},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, ptr, js string) {
		p, err := parsePointer(ptr)
		if err != nil {
			if _, cerr := Compile([]Rule{{Server: "*", Tool: "*", Class: Read, Action: Allow,
				When: map[string]Predicate{ptr: {Absent: bp(true)}}}}); cerr == nil {
				t.Fatalf("Compile accepted pointer %q that parsePointer refuses", ptr)
			}
			return
		}
		// Escaping is a bijection: the tokens re-encode to the pointer.
		var b strings.Builder
		for _, tok := range p.toks {
			b.WriteString("/" + canon.EscapeToken(tok))
		}
		if b.String() != ptr {
			t.Fatalf("pointer %q re-encodes as %q", ptr, b.String())
		}
		d := json.NewDecoder(strings.NewReader(js))
		d.UseNumber()
		var v any
		if d.Decode(&v) != nil {
			v = js
		}
		got, found := p.resolve(v)

		// Reference: walk by hand.
		cur, ok := v, true
		for _, tok := range p.toks {
			switch c := cur.(type) {
			case map[string]any:
				cur, ok = c[tok]
			case []any:
				ok = false
				if indexRE.MatchString(tok) {
					if idx, err := strconv.Atoi(tok); err == nil && idx < len(c) {
						cur, ok = c[idx], true
					}
				}
			default:
				ok = false
			}
			if !ok {
				break
			}
		}
		if found != ok {
			t.Fatalf("resolve(%q) in %s found = %v, reference %v", ptr, js, found, ok)
		}
		if found && fmt.Sprint(got) != fmt.Sprint(cur) {
			t.Fatalf("resolve(%q) = %v, reference %v", ptr, got, cur)
		}
		r := one(t, ptr, Predicate{Absent: bp(true)})
		if _, m := r.Decide("s", "t", v); m == found {
			t.Fatalf("absent=true on %q: %v with found=%v", ptr, m, found)
		}
	})
}

var indexRE = regexp.MustCompile(`^(?:0|[1-9][0-9]*)$`)

func FuzzNumber(f *testing.F) {
	for _, s := range []string{"0", "-0", "1.0", "1e0", "9007199254740993", "0.1", "1e-400",
		"1e999999999", "01", "+1", ".5", "1.", "0x10", "1/2", "-", "1E+2", "-12.3400"} {
		f.Add(s, int64(1), 0.1)
	}
	f.Fuzz(func(t *testing.T, s string, n int64, x float64) {
		d, ok := parseDecimal(s)
		numberShaped := s != "" && (s[0] == '-' || isDigit(s[0])) && isDigit(s[len(s)-1])
		if valid := numberShaped && json.Valid([]byte(s)); ok != valid {
			t.Fatalf("parseDecimal(%q) ok = %v, JSON says %v", s, ok, valid)
		}
		if !ok || len(s) > 200 {
			return
		}
		if i := strings.IndexAny(s, "eE"); i >= 0 {
			// Keep big.Rat's work small: it really computes 10^exp.
			ee, err := strconv.ParseInt(s[i+1:], 10, 64)
			if err != nil || ee > 1000 || ee < -1000 {
				return
			}
		}
		want, okr := new(big.Rat).SetString(s)
		if !okr {
			t.Fatalf("big.Rat refuses %q", s)
		}
		if got := decimalRat(d); got.Cmp(want) != 0 {
			t.Fatalf("parseDecimal(%q) = %+v = %v, want %v", s, d, got, want)
		}
		// Equality against an int64 is exact.
		if eq := (scalar{kind: sNumber, n: d}).equal(scalar{kind: sNumber, n: intDecimal(n)}); eq != (want.Cmp(new(big.Rat).SetInt64(n)) == 0) {
			t.Fatalf("%q equals int64 %d = %v", s, n, eq)
		}
		// Equality against a float64 is exact against its shortest decimal.
		if cs, err := configScalar(x); err == nil {
			fr, okf := new(big.Rat).SetString(strconv.FormatFloat(x, 'g', -1, 64))
			if !okf {
				t.Fatalf("big.Rat refuses float %v", x)
			}
			if eq := (scalar{kind: sNumber, n: d}).equal(cs); eq != (want.Cmp(fr) == 0) {
				t.Fatalf("%q equals float64 %v = %v", s, x, eq)
			}
		}
	})
}

func decimalRat(d decimal) *big.Rat {
	if d.digits == "" {
		return new(big.Rat)
	}
	n, _ := new(big.Int).SetString(d.digits, 10)
	r := new(big.Rat).SetInt(n)
	e := d.exp
	if e < 0 {
		e = -e
	}
	p := new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(e), nil))
	if d.exp < 0 {
		r.Quo(r, p)
	} else {
		r.Mul(r, p)
	}
	if d.neg {
		r.Neg(r)
	}
	return r
}
