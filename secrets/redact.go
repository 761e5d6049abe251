package secrets

import (
	"slices"
	"sync"
)

// Options choose what a Redactor does beyond known secrets.
type Options struct {
	// Found detects well-known credential formats ([secrets] found).
	Found bool
	// RedactFound also replaces found credentials with
	// "[redacted: credential <rule>]" ([secrets] redact_found).
	RedactFound bool
}

// Hit is one occurrence. It names what was found and where, never the value.
type Hit struct {
	Server, Name string   // the known secret; empty for a found credential
	Rule         string   // the found-credential rule; empty for a known secret
	Encoding     Encoding // how it was written
	Path         string   // JSON: RFC 6901 pointer to the string, number or key holding it; "" in text
	Offset       int      // byte offset in the input: of the occurrence in text, of the token in JSON
}

// Known reports whether the hit is a known secret (not a found credential).
func (h Hit) Known() bool { return h.Rule == "" }

func (h Hit) String() string {
	what := h.Server + " " + h.Name
	if h.Rule != "" {
		what = "credential " + h.Rule
	}
	where := h.Path
	if where == "" {
		where = "text"
	}
	return what + " (" + h.Encoding.String() + ") at " + where
}

// matcher finds and replaces one set of known secrets and the found
// credentials: a Redactor's current matcher.
type matcher struct {
	refs   []Ref
	labels [][]byte // per known secret
	exact  *automaton
	epats  []pattern
	fold   *automaton // hex, matched against lower-cased input
	fpats  []pattern
	rules  []rule
	opt    Options
	minLen int // text shorter than this holds nothing to find
	pool   sync.Pool
}

// newMatcher builds the matcher for k's secrets (k may be nil: found
// credentials only).
func newMatcher(k *Known, opt Options) *matcher {
	r := &matcher{opt: opt}
	var exact, hexes [][]byte
	if k != nil {
		for i, s := range k.list {
			r.refs = append(r.refs, Ref{s.Server, s.Name})
			r.labels = append(r.labels, []byte("[redacted: "+s.Server+" "+s.Name+"]"))
			ex, ep, hx := knownPatterns(i, []byte(s.Value))
			exact = append(exact, ex...)
			r.epats = append(r.epats, ep...)
			hexes = append(hexes, hx)
			r.fpats = append(r.fpats, pattern{secret: int32(i), enc: Hex, n: len(hx)})
		}
	}
	r.minLen = MinLen
	if opt.Found {
		r.rules = compileRules()
		kw := map[string]int{}
		for i, s := range foundRules {
			for _, w := range s.keywords {
				j, ok := kw[w]
				if !ok {
					j = len(exact)
					kw[w] = j
					exact = append(exact, []byte(w))
					r.epats = append(r.epats, pattern{secret: -1, n: len(w)})
				}
				r.epats[j].rules |= 1 << i
			}
		}
		if len(r.refs) == 0 {
			r.minLen = foundMinLen
		}
	}
	r.exact = newAutomaton(exact)
	r.fold = newAutomaton(hexes)
	for c := byte('A'); c <= 'F'; c++ {
		r.fold.cls[c] = r.fold.cls[c+('a'-'A')] // hex digits in either case
	}
	r.pool.New = func() any { return new(scratch) }
	return r
}

// span is an occurrence in the text being scanned.
type span struct {
	start, end int
	who        int32 // known secret index, or ^rule for a found credential
	enc        Encoding
}

// scratch is per-call working memory, pooled so the no-match path does not
// allocate.
type scratch struct {
	spans  []span
	punits []unit // percent view, '+' a space
	lunits []unit // percent view, '+' a plus
	uunits []unit // JSON-unescape view
	nunits []unit // newline-dropping view
	rules  uint64
	kws    []kwHit // found-credential keywords seen
	dec    []byte
	txt    []byte
	again  []byte // redact's next pass
	stack  []frame
}

func (r *matcher) get() *scratch {
	sc := r.pool.Get().(*scratch)
	sc.spans, sc.rules, sc.kws = sc.spans[:0], 0, sc.kws[:0]
	sc.stack = sc.stack[:0]
	return sc
}

func (r *matcher) put(sc *scratch) {
	const keep = 8 << 20 // buffers for messages up to this size are reused
	if cap(sc.dec) > keep {
		sc.dec = nil
	}
	if cap(sc.txt) > keep {
		sc.txt = nil
	}
	if cap(sc.again) > keep {
		sc.again = nil
	}
	r.pool.Put(sc)
}

// redacts reports whether the span is replaced (not only reported).
func (r *matcher) redacts(s span) bool { return s.who >= 0 || r.opt.RedactFound }

func (r *matcher) label(who int32) []byte {
	if who >= 0 {
		return r.labels[who]
	}
	return r.rules[^who].label
}

func (r *matcher) hit(s span, path string, off int) Hit {
	if s.who >= 0 {
		ref := r.refs[s.who]
		return Hit{Server: ref.Server, Name: ref.Name, Encoding: s.enc, Path: path, Offset: off}
	}
	return Hit{Rule: r.rules[^s.who].id, Encoding: Found, Path: path, Offset: off}
}

// RedactText replaces every occurrence in b, read as text. When nothing is
// replaced, out is b itself.
func (r *matcher) RedactText(b []byte) (out []byte, hits []Hit) {
	sc := r.get()
	defer r.put(sc)
	r.scan(b, sc)
	if len(sc.spans) == 0 {
		return b, nil
	}
	for _, s := range sc.spans {
		hits = append(hits, r.hit(s, "", s.start))
	}
	out, _ = r.redact(nil, b, sc)
	if out == nil {
		out = b
	}
	return out, hits
}

// maxPasses bounds redact's passes over one text.
const maxPasses = 4

// redact appends t with the redacting spans in sc.spans replaced to dst,
// like apply, and makes sure the result holds no secret either: a label can
// complete a secret that holds part of one (secret "ab[redacted: srv X]cd"
// between "ab" and "cd" is the secret again once replaced). So a changed
// text is scanned again until nothing redacts; if something still does after
// maxPasses passes, the whole text becomes the first such label.
func (r *matcher) redact(dst, t []byte, sc *scratch) ([]byte, bool) {
	base := len(dst)
	dst, changed := r.apply(dst, t, sc)
	if !changed {
		return dst, false
	}
	for pass := 1; ; pass++ {
		sc.spans, sc.rules, sc.kws = sc.spans[:0], 0, sc.kws[:0]
		r.scan(dst[base:], sc)
		i := slices.IndexFunc(sc.spans, r.redacts)
		if i < 0 {
			return dst, true
		}
		if pass == maxPasses {
			return append(dst[:base], r.label(sc.spans[i].who)...), true
		}
		sc.again, _ = r.apply(sc.again[:0], dst[base:], sc)
		dst = append(dst[:base], sc.again...)
	}
}

// apply appends t with the redacting spans in sc.spans replaced to dst. It
// returns dst unchanged and false when no span redacts. Spans are sorted and
// overlapping ones merged; each is widened to whole UTF-8 sequences so the
// result stays valid UTF-8 where t was.
func (r *matcher) apply(dst, t []byte, sc *scratch) ([]byte, bool) {
	slices.SortFunc(sc.spans, func(a, b span) int { return a.start - b.start })
	done, any := 0, false
	for i := 0; i < len(sc.spans); i++ {
		s := sc.spans[i]
		if !r.redacts(s) {
			continue
		}
		start, end := s.start, s.end
		for j := i + 1; j < len(sc.spans) && sc.spans[j].start < end; j++ {
			if r.redacts(sc.spans[j]) {
				end = max(end, sc.spans[j].end)
			}
			i = j
		}
		for n := 0; n < 3 && start > done && start < len(t) && t[start]&0xC0 == 0x80; n++ {
			start--
		}
		for n := 0; n < 3 && end < len(t) && t[end]&0xC0 == 0x80; n++ {
			end++
		}
		if start < done {
			start = done
		}
		if end <= done {
			continue
		}
		dst = append(dst, t[done:start]...)
		dst = append(dst, r.label(s.who)...)
		done, any = end, true
	}
	if !any {
		return dst, false
	}
	return append(dst, t[done:]...), true
}
