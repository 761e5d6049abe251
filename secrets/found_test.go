package secrets

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"strings"
	"testing"
)

// rep repeats a sample alphabet to n characters: the token bodies below are
// the documented shapes with arbitrary characters of the right class.
func rep(alpha string, n int) string {
	return strings.Repeat(alpha, n/len(alpha)+1)[:n]
}

func realPEMs(t *testing.T) map[string]string {
	t.Helper()
	rk, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	ek, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	p8, err := x509.MarshalPKCS8PrivateKey(ek)
	if err != nil {
		t.Fatal(err)
	}
	ec, err := x509.MarshalECPrivateKey(ek)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]string{
		"rsa-pkcs1": string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(rk)})),
		"pkcs8":     string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: p8})),
		"ec":        string(pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: ec})),
		"openssh":   "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\nQyNTUxOQAAACDx3XhOaEzVj3mDwXkhvN9Ck9g5sHdE7yH1zvXbWfLnxQAAAJjWbX0q1m19\n-----END OPENSSH PRIVATE KEY-----\n",
	}
}

// foundSamples are tokens in each provider's documented format; the AWS,
// Stripe, Slack webhook and JWT samples are the providers' own published
// examples.
func foundSamples(t *testing.T) map[string][]string {
	pems := realPEMs(t)
	an := "aB3dE5gH7jK9mN1pQ2rS4tU6vW8xY0zA"
	return map[string][]string{
		"private-key":             {pems["rsa-pkcs1"], pems["pkcs8"], pems["ec"], pems["openssh"], strings.TrimSuffix(pems["pkcs8"], "-----END PRIVATE KEY-----\n")},
		"aws-access-key-id":       {"AKIAIOSFODNN7EXAMPLE", "ASIAY34FZKBOKMUTVV7A"},
		"github-token":            {"ghp_" + rep(an, 36), "gho_" + rep(an, 36), "ghs_" + rep(an, 36)},
		"github-fine-grained-pat": {"github_pat_11ABCDEFG0" + rep(an, 12) + "_" + rep(an, 59)},
		"gitlab-token":            {"glpat-" + rep(an, 20), "glrt-" + rep(an, 20)},
		"slack-token":             {"xoxb-123456789012-1234567890123-" + rep(an, 24), "xoxp-1234567890-1234567890-1234567890123-" + rep("abcdef0123", 32)},
		"slack-webhook":           {"https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX"},
		"stripe-key":              {"sk_test_4eC39HqLyjWDarjtT1zdp7dc", "rk_live_" + rep(an, 24)},
		"google-api-key":          {"AIza" + rep(an+"-_", 35)},
		"openai-key":              {"sk-proj-" + rep(an, 58) + "T3BlbkFJ" + rep(an, 58), "sk-" + rep(an, 20) + "T3BlbkFJ" + rep(an, 20)},
		"anthropic-key":           {"sk-ant-api03-" + rep(an+"-_", 93) + "AA"},
		"jwt":                     {"eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"},
		"npm-token":               {"npm_" + rep(an, 36)},
		"huggingface-token":       {"hf_" + rep("abcdefghijKLMNOPQRST", 34)},
		"sendgrid-key":            {"SG." + rep(an, 22) + "." + rep(an+"-_", 43)},
		"pypi-token":              {"pypi-AgEIcHlwaS5vcmc" + rep(an, 60)},
		"digitalocean-token":      {"dop_v1_" + rep("0123456789abcdef", 64)},
	}
}

// TestFound_EveryRuleOnRealFormats: each rule finds its format in text and
// inside a JSON string (a PEM block's newlines escaped), and with
// RedactFound nothing of the credential is left.
func TestFound_EveryRuleOnRealFormats(t *testing.T) {
	find := NewRedactor(nil, Options{Found: true})
	red := NewRedactor(nil, Options{Found: true, RedactFound: true})
	samples := foundSamples(t)
	for _, r := range foundRules {
		if len(samples[r.id]) == 0 {
			t.Errorf("rule %s has no sample", r.id)
		}
	}
	for id, list := range samples {
		for _, s := range list {
			text := "config:\n  value = " + s + "\n"
			hits := find.Contains([]byte(text))
			if len(hits) != 1 || hits[0].Rule != id || hits[0].Known() {
				t.Errorf("%s: hits = %v for %.40q", id, hits, s)
				continue
			}
			if out, _ := find.RedactText([]byte(text)); string(out) != text {
				t.Errorf("%s: redacted without RedactFound", id)
			}
			js, _ := json.Marshal(map[string]any{"content": []any{map[string]string{"type": "text", "text": text}}})
			out, hits := red.RedactJSON(js)
			if len(hits) != 1 || hits[0].Path != "/content/0/text" || hits[0].Encoding != Found {
				t.Errorf("%s: JSON hits = %v", id, hits)
			}
			var back map[string][]map[string]string
			if err := json.Unmarshal(out, &back); err != nil {
				t.Fatalf("%s: output not JSON: %v", id, err)
			}
			want := "config:\n  value = [redacted: credential " + id + "]\n"
			if got := back["content"][0]["text"]; strings.TrimRight(got, "\n") != strings.TrimRight(want, "\n") {
				t.Errorf("%s: redacted text = %q, want %q", id, got, want)
			}
		}
	}
}

// TestFound_NoFalsePositives: prose, identifiers, hashes and public
// material that share a prefix with a rule are not credentials.
func TestFound_NoFalsePositives(t *testing.T) {
	r := NewRedactor(nil, Options{Found: true, RedactFound: true})
	for _, s := range []string{
		"the ghp_ prefix marks a GitHub token; sk-ant- an Anthropic key",
		"AKIA is how AWS key ids start; AKIASHORT",
		"-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE" + rep("abcdEFGH", 64) + "\n-----END PUBLIC KEY-----",
		"-----BEGIN CERTIFICATE-----\nMIIB" + rep("abcdEFGH", 64) + "\n-----END CERTIFICATE-----",
		"-----BEGIN RSA PRIVATE KEY----- is the header of a key file",
		"commit 71b4467e2c0d6f4f0e5bd0f1a6e1f5b8d7a9c3e2 and uuid 123e4567-e89b-12d3-a456-426614174000",
		"eyJhbGciOiJIUzI1NiJ9 is a JWT header alone",
		"sk_test_ is the Stripe test prefix; xoxb- is Slack's",
		"SG.abc.def is not a SendGrid key; hf_short; npm_install_script",
		"the MCP-GUARD_NPM_TOKEN_SECRET variable names are not tokens",
	} {
		if hits := r.Contains([]byte(s)); len(hits) != 0 {
			t.Errorf("%.50q: hits %v", s, hits)
		}
		if out, _ := r.RedactText([]byte(s)); string(out) != s {
			t.Errorf("%.50q changed", s)
		}
	}
}
