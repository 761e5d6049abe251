package config

import (
	"errors"
	"net/http"
	"strings"
	"testing"
)

// secret_env makes a name secret, public_env exempts one; each must name
// a variable the server gets; a url server takes neither; redact_found
// defaults to true. Errors are located.
func TestConfig_SecretEnvAndPublicEnv(t *testing.T) {
	env := mapEnv(map[string]string{"HOME": "/h", "DB_PASSWORD": "from-parent-123"})
	src := `[secrets]
redact_found = false

[[server]]
name = "a"
command = ["x"]
env = { API_TOKEN = "t0123456789", GIT_AUTHOR_NAME = "Ann", CONN = "postgres://u:p@h/db", NOT_SECRET_TOKEN = "visible-value" }
pass_env = ["DB_PASSWORD", "PATH"]
secret_env = ["CONN"]
public_env = ["NOT_SECRET_TOKEN"]
` + minimal
	c, err := Parse("c.toml", src, env)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(c.Servers[0].SecretEnvNames(), ","); got != "API_TOKEN,CONN,DB_PASSWORD" {
		t.Fatalf("secret names %q", got)
	}
	if c.RedactFoundInForce() {
		t.Fatalf("redact_found = false not applied")
	}
	if got := c.Servers[0].EnvSecrets(); len(got) != 2 || got[0].Name != "API_TOKEN" || got[1].Value != "postgres://u:p@h/db" {
		t.Fatalf("env secrets %+v", got)
	}
	if got := c.Servers[0].PassEnvSecrets(env); len(got) != 1 || got[0].Value != "from-parent-123" {
		t.Fatalf("pass_env secrets %+v", got)
	}
	if c, _ := Parse("c.toml", minimal, env); !c.RedactFoundInForce() {
		t.Fatalf("redact_found must default to true")
	}
	for _, bad := range []struct{ src, want string }{
		{"[[server]]\nname = \"a\"\ncommand = [\"x\"]\nsecret_env = [\"UNSET\"]\n", "c.toml:4:1: server[1] (a).secret_env: UNSET is neither set (env) nor passed (pass_env)"},
		{"[[server]]\nname = \"a\"\ncommand = [\"x\"]\npublic_env = [\"1bad\"]\n", "public_env: \"1bad\" is not a valid variable name"},
		{"[[server]]\nname = \"a\"\nurl = \"https://x.example/mcp\"\nsecret_env = [\"A\"]\n", "secret_env, public_env and cwd are for servers mcp-guard starts"},
	} {
		_, err := Parse("c.toml", bad.src+minimal, env)
		var ce *Error
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%s: got %v, want %q", bad.src, err, bad.want)
		}
	}
}

// A url server's secrets are each header value and the bearer token itself.
func TestConfig_HeaderSecrets(t *testing.T) {
	h := http.Header{"Authorization": {"Bearer tok-abcdef123"}, "X-Api-Key": {"key-0987654321"}}
	got := HeaderSecrets("r", h)
	if len(got) != 2 || got[0].Name != "Authorization" || got[0].Value != "tok-abcdef123" || got[1].Value != "key-0987654321" {
		t.Fatalf("header secrets %+v", got)
	}
}
