package config

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// oauth = {...} on a url server: its keys as written, [auth] store
// defaulted to "file"; everything that cannot work is refused naming the
// key.
func TestConfig_OAuth(t *testing.T) {
	env := mapEnv(map[string]string{"HOME": "/h"})
	rule := "[[rule]]\nserver = \"gh\"\ntool = \"*\"\nclass = \"read\"\naction = \"allow\"\n"
	remote := func(extra string) string {
		return "[[server]]\nname = \"gh\"\nurl = \"https://mcp.example.com/mcp\"\n" + extra + "\n" + rule
	}
	c, err := Parse("c.toml", remote(`oauth = { client_id = "abc", scopes = ["repo", "read:org"], client_metadata_url = "https://me.example/mcp-guard.json" }`), env)
	if err != nil {
		t.Fatal(err)
	}
	o := c.Servers[0].OAuth
	if o == nil || o.ClientID != "abc" || !slices.Equal(o.Scopes, []string{"repo", "read:org"}) || o.ClientMetadataURL != "https://me.example/mcp-guard.json" {
		t.Fatalf("oauth = %+v", o)
	}
	if got := c.Auth.StoreInForce(); got != "file" {
		t.Fatalf("auth.store in force %q, want file", got)
	}
	c, err = Parse("c.toml", "[auth]\nstore = \"keyring\"\n"+remote("oauth = {}"), env)
	if err != nil || c.Auth.StoreInForce() != "keyring" || c.Servers[0].OAuth == nil {
		t.Fatalf("oauth = {} with the keyring: %v %+v", err, c)
	}
	for src, key := range map[string]string{
		"[auth]\nstore = \"disk\"\n" + remote("oauth = {}"):                                    "auth.store",
		remote("oauth = {}\ntoken_env = \"T\""):                                                "(gh).oauth",
		remote("oauth = {}\nheaders = { authorization = \"x\" }"):                              "(gh).headers",
		remote(`oauth = { client_id = "a b" }`):                                                "oauth.client_id",
		remote(`oauth = { client_secret_env = "S" }`):                                          "oauth.client_secret_env",
		remote(`oauth = { client_id = "a", client_secret_env = "1S" }`):                        "oauth.client_secret_env",
		remote(`oauth = { scopes = ["a b"] }`):                                                 "oauth.scopes",
		remote(`oauth = { client_metadata_url = "http://me.example/c.json" }`):                 "oauth.client_metadata_url",
		remote(`oauth = { client_metadata_url = "https://me.example/" }`):                      "oauth.client_metadata_url",
		remote(`oauth = { clientid = "a" }`):                                                   "clientid",
		"[[server]]\nname = \"gh\"\nurl = \"http://mcp.example.com/mcp\"\noauth = {}\n" + rule: "url",
		"[[server]]\nname = \"gh\"\ncommand = [\"x\"]\noauth = {}\n" + rule:                    "(gh).oauth",
	} {
		_, err := Parse("c.toml", src, env)
		var ce *Error
		if !errors.As(err, &ce) {
			t.Errorf("accepted, want a config error naming %s:\n%s", key, src)
			continue
		}
		if !strings.Contains(err.Error(), key) {
			t.Errorf("error does not name %s: %v\n%s", key, err, src)
		}
	}
}
