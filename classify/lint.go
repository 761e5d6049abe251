package classify

import "fmt"

// Lint returns human-readable warnings, in rule order, about rules that can
// never match given the configured server names (which it takes to be all
// of them):
//   - the server glob matches no configured server;
//   - an earlier rule of the same kind (tool, prompt or resource) without
//     When matches every server and tool (prompt, URI) this rule does
//     (judged conservatively: that rule's glob is "*", is the same text,
//     matches this rule's literal name, or, for servers, matches every
//     configured server this rule's glob matches);
//   - the When predicates contradict each other: absent = true on a pointer
//     together with any other condition on it or below it, a condition that
//     needs a string, number or boolean on a pointer together with one that
//     needs something to resolve below it, or absent = true on "" (the whole
//     document is always present).
//
// Lint gives no warning it cannot justify; it does not find every dead rule.
func (r *Rules) Lint(servers []string) []string {
	if r == nil {
		return nil
	}
	var out []string
	for i := range r.rules {
		c := &r.rules[i]
		loc := fmt.Sprintf("rule[%d]", i+1)
		warn := func(format string, a ...any) {
			out = append(out, loc+": "+fmt.Sprintf(format, a...)+"; the rule can never match")
		}

		var mine []string
		for _, s := range servers {
			if c.server.match(s) {
				mine = append(mine, s)
			}
		}
		if len(mine) == 0 {
			warn("server %q matches no configured server", c.server.src)
		} else if j, ok := r.shadowedBy(i, mine); ok {
			warn("rule[%d] comes first, has no when, and matches every server and tool this rule does", j+1)
		}

		for a := range c.when {
			p := &c.when[a]
			if p.kind == pAbsent && p.absent && p.ptr.src == "" {
				warn(`when."": absent = true never holds (the whole document is always present)`)
				continue
			}
			for b := range c.when {
				q := &c.when[b]
				if a == b || !p.ptr.isPrefixOf(q.ptr) || (q.kind == pAbsent && q.absent) {
					continue
				}
				switch {
				case p.kind == pAbsent && p.absent:
					warn("when.%q: absent = true, so when.%q (%s) never holds", p.ptr.src, q.ptr.src, predNames[q.kind])
				case p.scalarOnly():
					warn("when.%q (%s) holds only for a string, number or boolean, below which when.%q (%s) never resolves",
						p.ptr.src, predNames[p.kind], q.ptr.src, predNames[q.kind])
				}
			}
		}
	}
	return out
}

// shadowedBy returns an earlier rule without When that matches every call
// rule i could match; mine are the configured servers rule i's glob matches.
func (r *Rules) shadowedBy(i int, mine []string) (int, bool) {
	c := &r.rules[i]
	for j := range i {
		e := &r.rules[j]
		if e.kind != c.kind || len(e.when) > 0 || !e.coversTarget(c) {
			continue
		}
		if e.server.covers(c.server) || allMatch(e.server, mine) {
			return j, true
		}
	}
	return 0, false
}

func allMatch(g *glob, names []string) bool {
	for _, n := range names {
		if !g.match(n) {
			return false
		}
	}
	return true
}

// coversTarget reports, conservatively, whether every tool or prompt name
// (or resource URI) c matches, e of the same kind matches too.
func (e *compiledRule) coversTarget(c *compiledRule) bool {
	if e.kind == kindResource {
		return e.uri.glob != nil && e.uri.glob.matchesAll() || e.uri.src == c.uri.src
	}
	return e.name.covers(c.name)
}
