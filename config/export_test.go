package config

import (
	"strings"
	"testing"
)

// [export] otlp: read as written; include_arguments off unless set;
// headers_env read from mcp-guard's environment.
func TestConfig_Export(t *testing.T) {
	env := mapEnv(map[string]string{"HOME": "/h", "OTEL_KEY": "k-123"})
	c, err := Parse("c.toml", minimal, env)
	if err != nil || c.Export.OTLP != "" || c.Export.IncludeArguments {
		t.Fatalf("no [export]: %+v, %v", c.Export, err)
	}
	c, err = Parse("c.toml", "[export]\notlp = \"http://127.0.0.1:4318\"\nheaders_env = { \"x-api-key\" = \"OTEL_KEY\" }\n"+minimal, env)
	if err != nil || c.Export.OTLP != "http://127.0.0.1:4318" || c.Export.IncludeArguments {
		t.Fatalf("[export] otlp: %+v, %v", c.Export, err)
	}
	h, err := c.Export.ExportHeader(env)
	if err != nil || h["x-api-key"] != "k-123" {
		t.Fatalf("headers: %v, %v", h, err)
	}
	if _, err := c.Export.ExportHeader(mapEnv(nil)); err == nil || strings.Contains(err.Error(), "k-123") {
		t.Fatalf("unset headers_env variable: %v", err)
	}
	c, err = Parse("c.toml", "[ledger]\nwitness = [\"otlp\"]\n[export]\notlp = \"https://otel.example.com\"\ninclude_arguments = true\n"+minimal, env)
	if err != nil || !c.Export.IncludeArguments || len(c.WitnessInForce().Specs) != 1 {
		t.Fatalf("otlp witness and include_arguments: %+v, %v", c.Export, err)
	}
	c, err = Parse("c.toml", "[export]\notlp = \"http://otel.example.com:4318\"\n"+minimal, env)
	if err != nil || !strings.Contains(strings.Join(c.Warnings(), "\n"), "plain http:// to another machine") {
		t.Fatalf("plain http to another machine, no headers: want a warning: %v, %v", c.Warnings(), err)
	}
}

// Each refused [export] setting is named, and a header's value never is.
func TestConfig_ExportRefused(t *testing.T) {
	env := mapEnv(map[string]string{"HOME": "/h"})
	for bad, want := range map[string]string{
		"[export]\notlp = \"grpc://127.0.0.1:4317\"":                                              "export.otlp: \"grpc://127.0.0.1:4317\": want http:// or https://",
		"[export]\notlp = \"http://u:sekret@127.0.0.1:4318\"":                                     "export.otlp: has a user or password",
		"[export]\notlp = \"http://otel.example.com\"\nheaders = { \"x-api-key\" = \"sekret\" }":  "plain http:// to another machine, so the headers would travel unencrypted",
		"[export]\notlp = \"http://127.0.0.1:4318\"\nheaders = { \"x-api-key\" = \"sek\\nret\" }": "the value of X-Api-Key has a line break",
		"[export]\notlp = \"http://127.0.0.1:4318\"\nheaders_env = { \"k\" = \"1BAD\" }":          `export.headers_env: k: "1BAD" is not a valid variable name`,
		"[export]\ninclude_arguments = true":                                                      "export: include_arguments and headers need export.otlp",
		"[ledger]\nwitness = [\"otlp\"]":                                                          `ledger.witness: "otlp" needs [export] otlp`,
	} {
		_, err := Parse("c.toml", bad+"\n"+minimal, env)
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "sekret") {
			t.Errorf("%s: err = %v, want %q and no secret", bad, err, want)
		}
	}
}
