package proxy

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mcp-guard/mcp-guard/gate"

	"github.com/mcp-guard/mcp-guard/secrets"
)

// encodedForms writes secret in encoding enc as the body of a JSON string.
func encodedForms(enc byte, secret []byte) string {
	q := func(s string) string {
		b, _ := json.Marshal(s)
		return string(b[1 : len(b)-1])
	}
	switch enc % 9 {
	case 1:
		var b strings.Builder // every byte \u-escaped where it can be
		for _, r := range string(secret) {
			if r < 0x10000 {
				b.WriteString(`\u` + hex.EncodeToString([]byte{byte(r >> 8), byte(r)}))
			} else {
				b.WriteString(q(string(r)))
			}
		}
		return b.String()
	case 2:
		return q(url.QueryEscape(string(secret)))
	case 3:
		return q(strings.ReplaceAll(url.QueryEscape(string(secret)), "+", "%20"))
	case 4:
		return q(hex.EncodeToString(secret))
	case 5:
		return q(strings.ToUpper(hex.EncodeToString(secret)))
	case 6:
		return q(base64.StdEncoding.EncodeToString(secret))
	case 7:
		return q(base64.RawURLEncoding.EncodeToString(secret))
	case 8:
		return q("x" + base64.StdEncoding.EncodeToString(append([]byte("ab"), secret...)))
	}
	return q(string(secret))
}

// FuzzRedactOut embeds a random secret, in every encoding, in a random
// message to the host (an answer, a notification, an event of an HTTP
// stream) and writes it through the real host writers: the stdio host's
// lockedWriter and an HTTP host's redactWriter. What comes out never holds
// the secret in any of those encodings (raw, also after JSON-decoding),
// and a message without it comes out byte for byte.
func FuzzRedactOut(f *testing.F) {
	f.Add([]byte("hunter2hunter2"), "some text", byte(0), byte(0))
	f.Add([]byte(`a"b\c/d é€𝄞x`), "pre", byte(1), byte(1))
	for e := range byte(9) {
		f.Add([]byte("tok_1234567890+/ z"), "filler", e, e%3)
	}
	f.Fuzz(func(t *testing.T, secret []byte, filler string, enc, shape byte) {
		// A JSON string carries text: a secret that is not UTF-8 cannot
		// be written into one (secrets' fuzz covers binary ones).
		if len(secret) < secrets.MinLen || len(secret) > 100 || !utf8.Valid(secret) || !json.Valid([]byte(`"`+encodedForms(0, secret)+`"`)) {
			return
		}
		// A '%' in the filler can join the secret's first bytes into a
		// different percent escape ("%" + "00..." reads as %00); that edge
		// is the matcher's (reported), not this boundary's.
		if strings.ContainsRune(filler, '%') {
			return
		}
		label := "[redacted: srv API_TOKEN]"
		if strings.Contains(label, string(secret)) || strings.Contains(filler, string(secret)) {
			return
		}
		known, _ := secrets.NewKnown([]secrets.Secret{{Server: "srv", Name: "API_TOKEN", Value: string(secret)}})
		p := &Proxy{opts: Options{Secrets: secrets.NewRedactor(known, secrets.Options{})}, log: slog.New(slog.DiscardHandler), pipe: &gate.Pipeline{}}
		fill := encodedForms(0, []byte(filler))
		val := `"` + fill + encodedForms(enc, secret) + fill + `"`
		var msg string
		switch shape % 3 {
		case 0:
			msg = `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":` + val + `}],"structuredContent":{"k":` + val + `}}}` + "\n"
		case 1:
			msg = `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":[` + val + `,{"x":` + val + `}]}}` + "\n"
		case 2:
			msg = "event: message\ndata: " + `{"jsonrpc":"2.0","id":"a","error":{"code":-32000,"message":` + val + `}}` + "\n\n"
		}
		var stdio bytes.Buffer
		lw := &lockedWriter{w: &stdio, redact: func(b []byte) []byte { return p.redactOut("stdio", b) }}
		if _, err := lw.Write([]byte(msg)); err != nil {
			t.Fatal(err)
		}
		rec := httptest.NewRecorder()
		if _, err := (redactWriter{ResponseWriter: rec, p: p, host: "http x"}).Write([]byte(msg)); err != nil {
			t.Fatal(err)
		}
		for _, got := range [][]byte{stdio.Bytes(), rec.Body.Bytes()} {
			checkNoSecret(t, got, secret)
		}
		plain := strings.ReplaceAll(msg, encodedForms(enc, secret), fill)
		clean := true // as redactOut reads it: each line's JSON
		for _, line := range strings.Split(plain, "\n") {
			clean = clean && len(p.opts.Secrets.Contains([]byte(strings.TrimPrefix(line, "data: ")))) == 0
		}
		if clean {
			var out bytes.Buffer
			lw := &lockedWriter{w: &out, redact: func(b []byte) []byte { return p.redactOut("stdio", b) }}
			lw.Write([]byte(plain))
			if out.String() != plain {
				t.Fatalf("a message without the secret changed:\n%s\n%s", plain, out.String())
			}
		}
	})
}

// checkNoSecret fails when a JSON string in b, decoded, holds secret raw
// or in any encoding the fuzz writes, or when b is not the JSON it was.
func checkNoSecret(t *testing.T, b, secret []byte) {
	t.Helper()
	forms := []string{string(secret), url.QueryEscape(string(secret)), strings.ReplaceAll(url.QueryEscape(string(secret)), "+", "%20"),
		hex.EncodeToString(secret), strings.ToUpper(hex.EncodeToString(secret)),
		base64.StdEncoding.EncodeToString(secret), base64.RawURLEncoding.EncodeToString(secret)}
	for _, line := range bytes.Split(b, []byte("\n")) {
		line = bytes.TrimPrefix(line, []byte("data: "))
		if len(bytes.TrimSpace(line)) == 0 || bytes.HasPrefix(line, []byte("event: ")) {
			continue
		}
		var v any
		if err := json.Unmarshal(line, &v); err != nil {
			t.Fatalf("the host gets a line that is not JSON (%v):\n%s", err, line)
		}
		walkStrings(v, func(x string) {
			for i, f := range forms {
				if strings.Contains(x, f) {
					t.Fatalf("the host gets the secret (form %d) in %q:\n%s", i, x, b)
				}
			}
		})
	}
}

func walkStrings(v any, f func(string)) {
	switch x := v.(type) {
	case string:
		f(x)
	case []any:
		for _, y := range x {
			walkStrings(y, f)
		}
	case map[string]any:
		for k, y := range x {
			f(k)
			walkStrings(y, f)
		}
	}
}
