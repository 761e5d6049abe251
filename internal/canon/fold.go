package canon

import (
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// FoldKey returns the key under which encoding/json matches a member name to
// a struct field: ASCII letters upper-cased, every other rune replaced by the
// smallest rune of its Unicode simple case-folding orbit. Two names have the
// same key exactly when bytes.EqualFold reports them equal, so "path",
// "PATH" and "pAtH" share one, as do "k", "K" and U+212A KELVIN SIGN, and
// "s" and U+017F LATIN SMALL LETTER LONG S.
func FoldKey(name string) string {
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c >= utf8.RuneSelf || 'a' <= c && c <= 'z' {
			return foldFrom(name, i)
		}
	}
	return name // already its own key: no allocation
}

func foldFrom(name string, i int) string {
	b := make([]byte, i, len(name)+4)
	copy(b, name[:i])
	for i < len(name) {
		c := name[i]
		if c < utf8.RuneSelf {
			if 'a' <= c && c <= 'z' {
				c -= 'a' - 'A'
			}
			b = append(b, c)
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(name[i:])
		b = utf8.AppendRune(b, foldRune(r))
		i += n
	}
	return string(b)
}

// foldRune returns the smallest rune of r's simple case-folding orbit, as
// encoding/json does.
func foldRune(r rune) rune {
	for {
		r2 := unicode.SimpleFold(r)
		if r2 <= r {
			return r2
		}
		r = r2
	}
}

// FoldCollision finds, in a value built by Decode (map[string]any and []any
// at any depth), an object holding two member names that differ but are
// equal under Unicode simple case folding. Readers disagree on such a pair:
// a JSON Pointer and JavaScript read each name as written, encoding/json
// (and decoders built on it) reads the last of them for a field named
// either way. It returns nil when there is none, else an *Error naming the
// object and both names (in sorted order). Objects are walked in sorted
// member order, so the same document always yields the same error.
func FoldCollision(v any) *Error {
	return foldWalk(v, "", 0)
}

func foldWalk(v any, ptr string, depth int) *Error {
	if depth > MaxDepth+1 { // Decode never builds deeper; a hand-built value is cut off
		return &Error{Offset: -1, Pointer: ptr, Reason: "nesting too deep to check member names"}
	}
	switch c := v.(type) {
	case map[string]any:
		if len(c) > 1 {
			if e := foldPair(c, ptr); e != nil {
				return e
			}
		}
		if len(c) == 0 {
			return nil
		}
		names := make([]string, 0, len(c))
		for k, child := range c {
			switch child.(type) {
			case map[string]any, []any:
				names = append(names, k)
			}
		}
		slices.Sort(names)
		for _, k := range names {
			if e := foldWalk(c[k], ptr+"/"+EscapeToken(k), depth+1); e != nil {
				return e
			}
		}
	case []any:
		for i, child := range c {
			switch child.(type) {
			case map[string]any, []any:
				if e := foldWalk(child, ptr+"/"+strconv.Itoa(i), depth+1); e != nil {
					return e
				}
			}
		}
	}
	return nil
}

// foldPair reports the first (in sorted order) pair of names in obj with one
// fold key.
func foldPair(obj map[string]any, ptr string) *Error {
	names := make([]string, 0, len(obj))
	for k := range obj {
		names = append(names, k)
	}
	slices.Sort(names)
	keys := make([]string, len(names))
	for i, k := range names {
		keys[i] = FoldKey(k)
	}
	if len(keys) <= 8 { // the common case: compare pairwise, no map
		for i := range keys {
			for j := i + 1; j < len(keys); j++ {
				if keys[i] == keys[j] {
					return foldError(ptr, names[i], names[j])
				}
			}
		}
		return nil
	}
	seen := make(map[string]int, len(keys))
	for i, key := range keys {
		if j, ok := seen[key]; ok {
			return foldError(ptr, names[j], names[i])
		}
		seen[key] = i
	}
	return nil
}

func foldError(ptr, a, b string) *Error {
	return &Error{Offset: -1, Pointer: ptr, Reason: "member names " + strconv.Quote(a) + " and " +
		strconv.Quote(b) + " differ only in case; servers disagree on which one they read"}
}

// EscapeToken escapes a member name as an RFC 6901 reference token.
func EscapeToken(s string) string {
	if !strings.ContainsAny(s, "~/") {
		return s
	}
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}
