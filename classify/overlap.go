package classify

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Overlaps returns, in rule order, a warning for each pair of tool or
// prompt rules that both match some call of a configured server with
// different actions, where the earlier one is not simply a narrower
// exception to the later (a later rule that covers the earlier one's
// server and name is the usual "this one, then the rest" and is not
// reported; nor is a rule Lint already says can never match). Each
// warning names a call both match: the earlier rule decides it.
func (r *Rules) Overlaps(servers []string) []string {
	if r == nil {
		return nil
	}
	var out []string
	for i := range r.rules {
		c := &r.rules[i]
		if c.kind == kindResource {
			continue
		}
		var mine []string
		for _, s := range servers {
			if c.server.match(s) {
				mine = append(mine, s)
			}
		}
		if len(mine) == 0 {
			continue
		}
		if _, shadowed := r.shadowedBy(i, mine); shadowed {
			continue
		}
		for j := range i {
			e := &r.rules[j]
			if e.kind != c.kind || e.action == c.action {
				continue
			}
			server := ""
			for _, s := range mine {
				if e.server.match(s) {
					server = s
					break
				}
			}
			if server == "" {
				continue
			}
			name, ok := e.name.meet(c.name)
			if !ok {
				continue
			}
			if (c.server.covers(e.server) || allMatch(c.server, serversOf(e.server, servers))) && c.name.covers(e.name) {
				continue // an exception before the rule for the rest
			}
			call := server + "/" + name
			if c.kind == kindPrompt {
				call = server + " prompt " + name
			}
			cond := ""
			if len(e.when) > 0 {
				cond = " where its when holds"
			}
			out = append(out, fmt.Sprintf("rule[%d] (%s) overlaps rule[%d] (%s): both match %q, which rule[%d] decides%s; narrow one of them, or order them as meant",
				i+1, c.action, j+1, e.action, call, j+1, cond))
		}
	}
	return out
}

func serversOf(g *glob, servers []string) []string {
	var out []string
	for _, s := range servers {
		if g.match(s) {
			out = append(out, s)
		}
	}
	return out
}

// atom is one step of a glob: a star, or one rune of a literal, '?' or a
// class.
type atom struct {
	star bool
	tok  *gtok // '?' or a class; nil with a literal rune
	r    rune
}

func (g *glob) atoms() []atom {
	var out []atom
	for i := range g.toks {
		t := &g.toks[i]
		switch t.kind {
		case gStar:
			out = append(out, atom{star: true})
		case gLit:
			for _, r := range t.lit {
				out = append(out, atom{r: r})
			}
		default:
			out = append(out, atom{tok: t})
		}
	}
	return out
}

func (a atom) has(r rune) bool {
	if a.tok == nil {
		return r == a.r
	}
	if a.tok.kind == gOne {
		return r != utf8.RuneError
	}
	in := false
	for _, rg := range a.tok.ranges {
		if rg.lo <= r && r <= rg.hi {
			in = true
			break
		}
	}
	return in != a.tok.neg
}

// candidates are runes one of which is in any non-empty atom both a and b
// accept, if there is one: their literal runes, the ends of their ranges
// and the runes just outside them, and a few plain ones.
func candidates(a, b atom) []rune {
	out := []rune{'x', 'a', '0', '_'}
	for _, x := range []atom{a, b} {
		if x.tok == nil {
			out = append(out, x.r)
			continue
		}
		for _, rg := range x.tok.ranges {
			out = append(out, rg.lo, rg.hi, rg.lo-1, rg.hi+1)
		}
	}
	return out
}

func meetRune(a, b atom) (rune, bool) {
	for _, r := range candidates(a, b) {
		if r > 0 && r <= utf8.MaxRune && a.has(r) && b.has(r) {
			return r, true
		}
	}
	return 0, false
}

// meet returns a string both g and h match, if there is one.
func (g *glob) meet(h *glob) (string, bool) {
	a, b := g.atoms(), h.atoms()
	one := atom{tok: &gtok{kind: gOne}}
	type res struct {
		s  string
		ok bool
	}
	memo := map[[2]int]res{}
	var f func(i, j int) (string, bool)
	f = func(i, j int) (string, bool) {
		k := [2]int{i, j}
		if m, ok := memo[k]; ok {
			return m.s, m.ok
		}
		var s string
		ok := false
		eat := func(x atom, i2, j2 int) { // one rune x accepts, then (i2, j2)
			if r, rok := meetRune(one, x); rok {
				if t, tok := f(i2, j2); tok {
					s, ok = string(r)+t, true
				}
			}
		}
		switch {
		case i == len(a) && j == len(b):
			ok = true
		case i < len(a) && a[i].star:
			if s, ok = f(i+1, j); !ok && j < len(b) {
				if b[j].star {
					s, ok = f(i, j+1)
				} else {
					eat(b[j], i, j+1)
				}
			}
		case j < len(b) && b[j].star:
			if s, ok = f(i, j+1); !ok && i < len(a) {
				eat(a[i], i+1, j)
			}
		case i < len(a) && j < len(b):
			if r, rok := meetRune(a[i], b[j]); rok {
				if t, tok := f(i+1, j+1); tok {
					s, ok = string(r)+t, true
				}
			}
		}
		memo[k] = res{s, ok}
		return s, ok
	}
	s, ok := f(0, 0)
	return strings.ToValidUTF8(s, ""), ok
}
