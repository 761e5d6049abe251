package secrets

import (
	"unicode/utf16"
	"unicode/utf8"
)

// unit is a run of source bytes that a decoding view turned into a
// different number of decoded bytes (a %XX or a JSON escape). Between units
// the view's bytes are the source's, one for one.
type unit struct {
	d, src     int // first decoded byte, first source byte
	dlen, slen int
}

// view is a decoding of the text stepped through the exact automaton
// alongside the raw bytes. While the decoded bytes equal the raw ones and
// the states agree, the view is synced and costs one comparison per byte.
type view struct {
	kind   uint8 // viewPercent, viewPercentPlus, viewJSON, viewNoNewline
	enc    Encoding
	state  int32
	synced bool
	at     int // source bytes consumed
	delta  int // decoded position minus source position after the last unit
	units  []unit
}

// scan appends every occurrence in t to sc.spans (offsets into t) and runs
// the found-credential rules whose keywords occurred.
func (r *matcher) scan(t []byte, sc *scratch) {
	if len(t) < r.minLen {
		return
	}
	ex, fo := r.exact, r.fold
	enext, ecls, fnext, fcls := ex.next, &ex.cls, fo.next, &fo.cls
	var s, h int32
	pv := view{kind: viewPercent, enc: Percent, synced: true, units: sc.punits[:0]}
	lv := view{kind: viewPercentPlus, enc: Percent, synced: true, units: sc.lunits[:0]}
	uv := view{kind: viewJSON, enc: JSONEscaped, synced: true, units: sc.uunits[:0]}
	nv := view{kind: viewNoNewline, enc: Raw, synced: true, units: sc.nunits[:0]}
	for i := 0; i < len(t); i++ {
		c := t[i]
		prev := s
		t1 := enext[s+int32(ecls[c])]
		if t1 < 0 {
			t1 = ^t1
			r.reportExact(t, sc, ex.output(t1), i+1)
		}
		s = t1
		t2 := fnext[h+int32(fcls[c])] // fcls folds case: hex in either case
		if t2 < 0 {
			t2 = ^t2
			for _, id := range fo.output(t2) {
				p := &r.fpats[id]
				sc.spans = append(sc.spans, span{start: i + 1 - p.n, end: i + 1, who: p.secret, enc: Hex})
			}
		}
		h = t2
		if pv.synced && lv.synced && uv.synced && nv.synced && c != '%' && c != '+' && c != '\\' && c != '\n' && c != '\r' {
			continue
		}
		if (c == '%' || c == '+' || !pv.synced) && i >= pv.at {
			r.stepView(&pv, t, i, prev, s, sc)
		}
		if (c == '%' || !lv.synced) && i >= lv.at {
			r.stepView(&lv, t, i, prev, s, sc)
		}
		if (c == '\\' || !uv.synced) && i >= uv.at {
			r.stepView(&uv, t, i, prev, s, sc)
		}
		if (c == '\n' || c == '\r' || !nv.synced) && i >= nv.at {
			r.stepView(&nv, t, i, prev, s, sc)
		}
	}
	sc.punits, sc.lunits, sc.uunits, sc.nunits = pv.units, lv.units, uv.units, nv.units
	if sc.rules != 0 {
		r.runRules(t, sc)
	}
}

// reportExact records the exact automaton's outputs ending at end.
func (r *matcher) reportExact(t []byte, sc *scratch, ids []int32, end int) {
	for _, id := range ids {
		p := &r.epats[id]
		if p.secret < 0 {
			sc.rules |= p.rules
			sc.kws = append(sc.kws, kwHit{end: end, rules: p.rules})
			continue
		}
		start, e := end-p.n, end
		if p.enc == Base64 {
			start, e = widenBase64(t, start, e, p)
		}
		sc.spans = append(sc.spans, span{start: start, end: e, who: p.secret, enc: p.enc})
	}
}

// widenBase64 takes in the characters that hold some of the secret's bits
// beside the core, and the padding after it (also percent-encoded, %3D).
func widenBase64(t []byte, start, end int, p *pattern) (int, int) {
	if p.lead > 0 && start > 0 && isB64(t[start-1], p.url) {
		start--
	}
	if p.trail > 0 && end < len(t) && isB64(t[end], p.url) {
		end++
	}
	for n := 0; n < 2 && end < len(t); n++ {
		switch {
		case t[end] == '=':
			end++
		case end+2 < len(t) && t[end] == '%' && t[end+1] == '3' && (t[end+2] == 'D' || t[end+2] == 'd'):
			end += 3
		default:
			return start, end
		}
	}
	return start, end
}

const (
	viewPercent     = iota // %XX and '+' as a space
	viewPercentPlus        // %XX, '+' itself
	viewJSON               // JSON string escapes
	viewNoNewline          // CR and LF dropped: base64 wrapped at 64 or 76 columns
)

// decodeUnit decodes the unit starting at t[i] into buf: the decoded bytes
// and the source length.
func decodeUnit(kind uint8, t []byte, i int, buf *[4]byte) (dlen, slen int) {
	switch kind {
	case viewPercent:
		return percentUnit(t, i, buf)
	case viewPercentPlus:
		return percentLiteralPlus(t, i, buf)
	case viewNoNewline:
		if t[i] == '\n' || t[i] == '\r' {
			return 0, 1
		}
		buf[0] = t[i]
		return 1, 1
	}
	return jsonUnit(t, i, buf)
}

// stepView advances v over the unit at t[i]. prev is the exact automaton's
// state before t[i], cur its state after.
func (r *matcher) stepView(v *view, t []byte, i int, prev, cur int32, sc *scratch) {
	if v.synced {
		v.synced = false
		v.state = prev
	}
	var buf [4]byte
	dlen, slen := decodeUnit(v.kind, t, i, &buf)
	if dlen != slen {
		v.units = append(v.units, unit{d: i + v.delta, src: i, dlen: dlen, slen: slen})
	}
	ex := r.exact
	d := i + v.delta // decoded position of buf[0]
	for k := range dlen {
		t1 := ex.next[v.state+int32(ex.cls[buf[k]])]
		if t1 < 0 {
			t1 = ^t1
			r.reportView(v, t, sc, ex.output(t1), d+k+1, i+slen)
		}
		v.state = t1
	}
	v.delta += dlen - slen
	v.at = i + slen
	if slen == 1 && buf[0] == t[i] && v.state == cur {
		v.synced = true
	}
}

// reportView records outputs of a view ending at decoded position dend,
// whose last byte came from source bytes ending at send.
func (r *matcher) reportView(v *view, t []byte, sc *scratch, ids []int32, dend, send int) {
	for _, id := range ids {
		p := &r.epats[id]
		if p.secret < 0 {
			continue
		}
		enc := v.enc
		if p.enc != Raw {
			enc = p.enc
		}
		start, end := srcOf(v.units, dend-p.n), send
		if p.enc == Base64 {
			start, end = widenBase64(t, start, end, p)
		}
		sc.spans = append(sc.spans, span{start: start, end: end, who: p.secret, enc: enc})
	}
}

// srcOf maps decoded position d to the first source byte it came from.
func srcOf(units []unit, d int) int {
	lo, hi := 0, len(units) // last unit with u.d <= d
	for lo < hi {
		m := (lo + hi) / 2
		if units[m].d <= d {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo == 0 {
		return d
	}
	u := units[lo-1]
	if d < u.d+u.dlen {
		return u.src
	}
	return u.src + u.slen + (d - u.d - u.dlen)
}

func unhex(c byte) (byte, bool) {
	switch {
	case c >= '0' && c <= '9':
		return c - '0', true
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10, true
	case c >= 'A' && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// percentUnit decodes %XX (either case) and '+' (a space, as
// url.QueryEscape writes it).
func percentUnit(t []byte, i int, buf *[4]byte) (int, int) {
	switch t[i] {
	case '%':
		if i+2 < len(t) {
			a, ok1 := unhex(t[i+1])
			b, ok2 := unhex(t[i+2])
			if ok1 && ok2 {
				buf[0] = a<<4 | b
				return 1, 3
			}
		}
	case '+':
		buf[0] = ' '
		return 1, 1
	}
	buf[0] = t[i]
	return 1, 1
}

// percentLiteralPlus decodes %XX and leaves '+' a plus, as url.PathEscape
// and encodeURI write it.
func percentLiteralPlus(t []byte, i int, buf *[4]byte) (int, int) {
	if t[i] == '+' {
		buf[0] = '+'
		return 1, 1
	}
	return percentUnit(t, i, buf)
}

// jsonUnit decodes a JSON string escape, as a decoder reading the text as
// the body of a JSON string would.
func jsonUnit(t []byte, i int, buf *[4]byte) (int, int) {
	buf[0] = t[i]
	if t[i] != '\\' || i+1 >= len(t) {
		return 1, 1
	}
	switch c := t[i+1]; c {
	case '"', '\\', '/':
		buf[0] = c
		return 1, 2
	case 'b':
		buf[0] = '\b'
		return 1, 2
	case 'f':
		buf[0] = '\f'
		return 1, 2
	case 'n':
		buf[0] = '\n'
		return 1, 2
	case 'r':
		buf[0] = '\r'
		return 1, 2
	case 't':
		buf[0] = '\t'
		return 1, 2
	case 'u':
		r1, ok := hex4(t, i+2)
		if !ok {
			return 1, 1
		}
		slen := 6
		rr := rune(r1)
		if utf16.IsSurrogate(rr) {
			rr = utf8.RuneError
			if i+11 < len(t) && t[i+6] == '\\' && t[i+7] == 'u' {
				if r2, ok := hex4(t, i+8); ok {
					if p := utf16.DecodeRune(rune(r1), rune(r2)); p != utf8.RuneError {
						rr, slen = p, 12
					}
				}
			}
		}
		return utf8.EncodeRune(buf[:], rr), slen
	}
	return 1, 1
}

func hex4(t []byte, i int) (uint16, bool) {
	if i+4 > len(t) {
		return 0, false
	}
	var v uint16
	for _, c := range t[i : i+4] {
		x, ok := unhex(c)
		if !ok {
			return 0, false
		}
		v = v<<4 | uint16(x)
	}
	return v, true
}

// kwHit is where a found-credential rule's keyword ended.
type kwHit struct {
	end   int
	rules uint64
}

// runRules runs each rule whose keyword the pass saw, on the text within
// the rule's window of each keyword (windows that touch are joined), so a
// large text with a stray keyword costs a window, not a scan of the text.
func (r *matcher) runRules(t []byte, sc *scratch) {
	for i, ru := range r.rules {
		if sc.rules&(1<<i) == 0 {
			continue
		}
		ws, we := -1, -1
		flush := func() {
			for _, m := range ru.re.FindAllIndex(t[ws:we], -1) {
				sc.spans = append(sc.spans, span{start: ws + m[0], end: ws + m[1], who: ^int32(i)})
			}
		}
		for _, k := range sc.kws {
			if k.rules&(1<<i) == 0 {
				continue
			}
			s, e := max(0, k.end-ru.window), min(len(t), k.end+ru.window)
			if ws >= 0 && s <= we {
				we = e
				continue
			}
			if ws >= 0 {
				flush()
			}
			ws, we = s, e
		}
		if ws >= 0 {
			flush()
		}
	}
}
