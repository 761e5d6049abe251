package secrets

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// leak reports an encoding of secret that survives in the JSON text out: in
// any decoded string, number or key, raw, JSON-escaped
// (one level of nesting), percent-decoded, hex-decoded or base64-decoded at
// every offset. It decodes independently of the package's matcher.
func leak(out, secret []byte) string {
	// Not the raw bytes: there a run of backslashes or quotes that JSON
	// escaping doubled can look like a secret made of them without holding it.
	var texts [][]byte
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.UseNumber()
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return "output is not JSON: " + err.Error()
		}
		switch v := tok.(type) {
		case string:
			texts = append(texts, []byte(v))
		case json.Number:
			texts = append(texts, []byte(v))
		}
	}
	for _, t := range texts {
		if w := leakText(t, secret); w != "" {
			return w
		}
	}
	return ""
}

// leakText checks one text in every encoding.
func leakText(t, secret []byte) string {
	if bytes.Contains(t, secret) {
		return "raw"
	}
	if bytes.Contains(unescapeJSON(t), secret) {
		return "json-escaped"
	}
	if bytes.Contains(unpercent(t, true), secret) || bytes.Contains(unpercent(t, false), secret) {
		return "percent"
	}
	for _, run := range runs(t, isHexDigit) {
		for off := 0; off < 2 && off < len(run); off++ {
			r := run[off:]
			r = r[:len(r)/2*2]
			d, err := hex.DecodeString(string(r))
			if err == nil && bytes.Contains(d, secret) {
				return "hex"
			}
		}
	}
	for _, run := range runs(t, func(c byte) bool { return isB64(c, false) || isB64(c, true) }) {
		std := strings.NewReplacer("-", "+", "_", "/").Replace(string(run))
		for off := 0; off < 4 && off < len(std); off++ {
			r := std[off:]
			if len(r)%4 == 1 {
				r = r[:len(r)-1]
			}
			d, err := base64.RawStdEncoding.DecodeString(r)
			if err == nil && bytes.Contains(d, secret) {
				return fmt.Sprintf("base64 at offset %d", off)
			}
		}
	}
	return ""
}

func isHexDigit(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

func runs(t []byte, in func(byte) bool) [][]byte {
	var out [][]byte
	for i := 0; i < len(t); {
		if !in(t[i]) {
			i++
			continue
		}
		j := i
		for j < len(t) && in(t[j]) {
			j++
		}
		out = append(out, t[i:j])
		i = j
	}
	return out
}

// unescapeJSON decodes JSON string escapes in t, leniently.
func unescapeJSON(t []byte) []byte {
	var out []byte
	for i := 0; i < len(t); i++ {
		if t[i] != '\\' || i+1 >= len(t) {
			out = append(out, t[i])
			continue
		}
		if t[i+1] == 'u' && i+6 <= len(t) {
			v, err := strconv.ParseUint(string(t[i+2:i+6]), 16, 32)
			if err == nil {
				r := rune(v)
				n := 6
				if utf16.IsSurrogate(r) && i+12 <= len(t) && t[i+6] == '\\' && t[i+7] == 'u' {
					if v2, err := strconv.ParseUint(string(t[i+8:i+12]), 16, 32); err == nil {
						r, n = utf16.DecodeRune(r, rune(v2)), 12
					}
				}
				out = utf8.AppendRune(out, r)
				i += n - 1
				continue
			}
		}
		if c, ok := map[byte]byte{'"': '"', '\\': '\\', '/': '/', 'b': 8, 'f': 12, 'n': 10, 'r': 13, 't': 9}[t[i+1]]; ok {
			out = append(out, c)
			i++
			continue
		}
		out = append(out, t[i])
	}
	return out
}

// unpercent decodes %XX and (plusSpace) '+' leniently.
func unpercent(t []byte, plusSpace bool) []byte {
	var out []byte
	for i := 0; i < len(t); i++ {
		switch {
		case t[i] == '%' && i+2 < len(t) && isHexDigit(t[i+1]) && isHexDigit(t[i+2]):
			b, _ := hex.DecodeString(string(t[i+1 : i+3]))
			out = append(out, b...)
			i += 2
		case t[i] == '+' && plusSpace:
			out = append(out, ' ')
		default:
			out = append(out, t[i])
		}
	}
	return out
}

// encodeURIComponent is JavaScript's.
func encodeURIComponent(s []byte) string {
	var b strings.Builder
	for _, c := range s {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-_.!~*'()", c) >= 0 {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// escapeJSONSplit writes s as a JSON string body, escaping the characters
// whose bit in mask is set (\uXXXX, surrogate pairs above U+FFFF) besides
// those JSON requires.
func escapeJSONSplit(s []byte, mask []byte) string {
	var b strings.Builder
	bit := func(i int) bool {
		if len(mask) == 0 {
			return true
		}
		return mask[(i/8)%len(mask)]&(1<<(i%8)) != 0
	}
	for i, w := 0, 0; i < len(s); i += w {
		r, n := utf8.DecodeRune(s[i:])
		w = n
		switch {
		case r == utf8.RuneError && n == 1:
			b.WriteByte(s[i]) // invalid UTF-8 stays a raw byte
		case r == '"' || r == '\\' || r < 0x20 || bit(i):
			if r > 0xFFFF {
				r1, r2 := utf16Pair(r)
				fmt.Fprintf(&b, `\u%04x\u%04X`, r1, r2)
			} else if i%2 == 0 {
				fmt.Fprintf(&b, `\u%04x`, r)
			} else {
				fmt.Fprintf(&b, `\u%04X`, r)
			}
		default:
			b.Write(s[i : i+n])
		}
	}
	return b.String()
}

func utf16Pair(r rune) (rune, rune) {
	r -= 0x10000
	return 0xD800 + (r>>10)&0x3FF, 0xDC00 + r&0x3FF
}
