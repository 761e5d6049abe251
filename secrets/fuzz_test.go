package secrets

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"strings"
	"testing"
)

// encodeAs writes secret (with a prefix of pre bytes taken from filler, for
// the base64 alignments) in encoding enc, as the body of a JSON string.
func encodeAs(enc byte, secret, filler []byte) string {
	pre := bytes.Clone(filler[:min(len(filler), int(enc/16)%3)]) // appended to below
	body := func(s string) string { return escapeJSONSplit([]byte(s), []byte{0}) }
	switch enc % 16 {
	case 0:
		return body(string(secret))
	case 1:
		return escapeJSONSplit(secret, filler) // split by escapes where filler's bits say
	case 2:
		return body(url.QueryEscape(string(secret)))
	case 3:
		return body(encodeURIComponent(secret))
	case 4:
		return body(lowerPercent(url.QueryEscape(string(secret))))
	case 5:
		return body(strings.ReplaceAll(url.QueryEscape(string(secret)), "+", "%20"))
	case 6:
		return body(hex.EncodeToString(secret))
	case 7:
		return body(strings.ToUpper(hex.EncodeToString(secret)))
	case 8: // wrapped at 76 columns when the filler's length is odd, as base64(1) writes it
		e := base64.StdEncoding.EncodeToString(append(pre, secret...))
		if len(filler)%2 == 1 {
			var w []string
			for len(e) > 76 {
				w, e = append(w, e[:76]), e[76:]
			}
			e = strings.Join(append(w, e), "\n")
		}
		return body(e)
	case 9:
		return body(base64.RawStdEncoding.EncodeToString(append(pre, secret...)))
	case 10:
		return body(base64.URLEncoding.EncodeToString(append(pre, secret...)))
	case 11:
		return body(base64.RawURLEncoding.EncodeToString(append(pre, secret...)))
	case 12:
		return escapeJSONSplit([]byte(base64.StdEncoding.EncodeToString(append(pre, secret...))), filler)
	case 13: // a JSON document inside the string
		inner := `{"v":"` + escapeJSONSplit(secret, filler) + `"}`
		return escapeJSONSplit([]byte(inner), []byte{0})
	case 14:
		return body(url.PathEscape(string(secret)))
	}
	return body(string(secret)) + body(string(filler)) + body(string(secret))
}

// FuzzRedactJSON embeds a random secret in random JSON in every encoding and
// requires that no encoding of it survives RedactJSON, that the output is
// JSON, and that Contains finds nothing in it.
func FuzzRedactJSON(f *testing.F) {
	f.Add([]byte("hunter2hunter2"), []byte("some text around"), byte(0), byte(0))
	f.Add([]byte(`a"b\c/d é€𝄞`), []byte{0x55, 0xAA, 'x'}, byte(1), byte(1))
	f.Add([]byte("p@ss w+rd/=="), []byte("pre"), byte(0x28), byte(2))
	f.Add([]byte("\x00\x01\xff\xfe binary secret"), []byte("\x80abc"), byte(0x19), byte(3))
	f.Add([]byte("ab[redacted: srv API_TOKEN]ab"), []byte("ab"), byte(0), byte(0)) // a label completes it
	for e := range byte(16) {
		f.Add([]byte("tok_1234567890+/"), []byte("filler filler"), e|0x10, e%4)
	}
	f.Fuzz(func(t *testing.T, secret, filler []byte, enc, shape byte) {
		if len(secret) < MinLen || len(secret) > 200 {
			return
		}
		label := "[redacted: srv API_TOKEN]"
		if strings.Contains(label, string(secret)) {
			return // the label itself would hold it
		}
		k, _ := NewKnown([]Secret{{"srv", "API_TOKEN", string(secret)}, {"other", "X_KEY", "0123456789abcdef"}})
		r := NewRedactor(k, Options{Found: true, RedactFound: true})
		around := escapeJSONSplit(filler, []byte{0})
		text := around + encodeAs(enc, secret, filler) + around
		var in string
		switch shape % 4 {
		case 0:
			in = `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"` + text + `"}]}}`
		case 1:
			in = `{"result":{"structuredContent":{"a":[1,{"b":"` + text + `"}],"n":null}}}`
		case 2:
			in = `["` + text + `",` + `"` + text + `"]`
		case 3:
			in = `{"` + text + `":"` + text + `"}`
		}
		if !json.Valid([]byte(in)) {
			return // filler with invalid UTF-8 the escaper kept raw: not what a server sends
		}
		out, hits := r.RedactJSON([]byte(in))
		if !json.Valid(out) {
			t.Fatalf("output is not JSON:\n in %q\nout %q", in, out)
		}
		if w := leak(out, secret); w != "" {
			t.Fatalf("secret survives (%s):\n in %q\nout %q", w, in, out)
		}
		if leak([]byte(in), secret) != "" && len(hits) == 0 {
			t.Fatalf("no hits for %q", in)
		}
		for _, h := range r.Contains(out) {
			if h.Known() && h.Name == "API_TOKEN" {
				t.Fatalf("Contains(output) = %v\nout %q", h, out)
			}
		}
		if bytes.Equal(out, []byte(in)) && len(hits) > 0 {
			for _, h := range hits {
				if h.Known() {
					t.Fatalf("hit %v but output unchanged", h)
				}
			}
		}
	})
}

// FuzzRedactText: the same encodings in plain text (a log message, an
// error string) with arbitrary bytes around them.
func FuzzRedactText(f *testing.F) {
	f.Add([]byte("hunter2hunter2"), []byte("Authorization: Bearer "), byte(0))
	f.Add([]byte(`a"b\c/d é€𝄞`), []byte{0x55, '%', '\\'}, byte(1))
	f.Add([]byte("p@ss w+rd/=="), []byte("q=+%2"), byte(0x22))
	f.Fuzz(func(t *testing.T, secret, filler []byte, enc byte) {
		if len(secret) < MinLen || len(secret) > 200 || strings.Contains("[redacted: srv API_TOKEN]", string(secret)) {
			return
		}
		k, _ := NewKnown([]Secret{{"srv", "API_TOKEN", string(secret)}})
		r := NewRedactor(k, Options{})
		around := string(filler)
		in := around + encodeAs(enc, secret, filler) + around
		out, _ := r.RedactText([]byte(in))
		if w := leakText(out, secret); w != "" {
			t.Fatalf("secret survives (%s):\n in %q\nout %q", w, in, out)
		}
	})
}
