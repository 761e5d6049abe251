package classify

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/mcp-guard/mcp-guard/internal/canon"
)

// CaseMismatch reports an argument member whose name differs from the name a
// tool rule's predicate reads only in case (under Unicode simple case
// folding), for any tool rule whose server and tool globs match: a predicate
// on "/path" would see nothing where a server decoding with encoding/json
// reads "PATH" as its path. The caller refuses such arguments as invalid
// before any rule decides. Every matching rule is checked, not only those
// before the deciding one, so the answer does not depend on rule order.
func (r *Rules) CaseMismatch(server, tool string, args any) error {
	return r.caseMismatch(kindTool, server, tool, args)
}

// CaseMismatchPrompt is CaseMismatch for the prompt rules.
func (r *Rules) CaseMismatchPrompt(server, prompt string, args any) error {
	return r.caseMismatch(kindPrompt, server, prompt, args)
}

func (r *Rules) caseMismatch(kind ruleKind, server, name string, args any) error {
	if r == nil {
		return nil
	}
	for i := range r.rules {
		c := &r.rules[i]
		if c.kind != kind || len(c.when) == 0 || !c.server.match(server) || !c.name.match(name) {
			continue
		}
		for j := range c.when {
			if got, ok := c.when[j].ptr.misspelled(args); ok {
				return fmt.Errorf("member %s differs only in case from %s, which rule %d reads; send the name exactly as %s",
					got, strconv.Quote(c.when[j].ptr.src), i+1, strconv.Quote(c.when[j].ptr.src))
			}
		}
	}
	return nil
}

// misspelled walks p through doc. Where a token names no member of an
// object but a member with the same case-folded name exists, it returns
// that member's pointer (quoted): a decoder that folds case would read it.
func (p pointer) misspelled(doc any) (string, bool) {
	v := doc
	var at strings.Builder
	for _, tok := range p.toks {
		switch c := v.(type) {
		case map[string]any:
			if next, ok := c[tok]; ok {
				v = next
				at.WriteString("/" + canon.EscapeToken(tok))
				continue
			}
			key := canon.FoldKey(tok)
			for k := range c {
				if canon.FoldKey(k) == key {
					return strconv.Quote(at.String() + "/" + canon.EscapeToken(k)), true
				}
			}
			return "", false
		case []any:
			i, ok := arrayIndex(tok)
			if !ok || i >= len(c) {
				return "", false
			}
			v = c[i]
			at.WriteString("/" + tok)
		default:
			return "", false
		}
	}
	return "", false
}
