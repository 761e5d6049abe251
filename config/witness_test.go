package config

import (
	"strings"
	"testing"
	"time"

	"github.com/mcp-guard/mcp-guard/internal/witnessspec"
)

func TestConfig_WitnessDefaultsAndSet(t *testing.T) {
	env := mapEnv(map[string]string{"HOME": "/h"})
	c, err := Parse("c.toml", minimal, env)
	if err != nil {
		t.Fatal(err)
	}
	w := c.WitnessInForce()
	if !w.Default || w.Every != 100 || w.Interval != 10*time.Second || w.Required {
		t.Fatalf("defaults: %+v", w)
	}
	c, err = Parse("c.toml", "[ledger]\nwitness = [\"journal\", \"syslog:/tmp/log.sock\", \"file:~/heads.jsonl\"]\nwitness_every = 5\nwitness_interval = \"2s\"\nwitness_required = true\n"+minimal, env)
	if err != nil {
		t.Fatal(err)
	}
	w = c.WitnessInForce()
	want := []witnessspec.Spec{{Kind: "journal", Path: witnessspec.JournalSocket}, {Kind: "syslog", Path: "/tmp/log.sock"}, {Kind: "file", Path: "/h/heads.jsonl"}}
	if w.Default || len(w.Specs) != 3 || w.Specs[0] != want[0] || w.Specs[1] != want[1] || w.Specs[2] != want[2] || w.Every != 5 || w.Interval != 2*time.Second || !w.Required {
		t.Fatalf("set: %+v", w)
	}
	c, err = Parse("c.toml", "[ledger]\nwitness = []\n"+minimal, env)
	if err != nil || len(c.WitnessInForce().Specs) != 0 || c.WitnessInForce().Default {
		t.Fatalf("witness = []: %+v, %v", c.WitnessInForce(), err)
	}
}

// Each refused witness setting names the file and the key.
func TestConfig_WitnessRefused(t *testing.T) {
	env := mapEnv(map[string]string{"HOME": "/h"})
	for bad, want := range map[string]string{
		`witness = ["otlp"]`:                      `ledger.witness: "otlp" needs [export] otlp`,
		`witness = ["journal", "carrier-pigeon"]`: `ledger.witness[2]: "carrier-pigeon": unknown witness`,
		`witness = ["file:"]`:                     `ledger.witness[1]: "file:": want file:PATH`,
		`witness = ["journal", "journal"]`:        `ledger.witness[2]: "journal" is named twice`,
		`witness_every = 0`:                       `ledger.witness_every: 0: want 1 to 1000000`,
		`witness_interval = "soon"`:               `ledger.witness_interval: "soon": want a duration`,
		`witness_interval = "1ms"`:                `ledger.witness_interval: "1ms": want 100ms to 1h`,
		"witness = []\nwitness_required = true":   `ledger.witness_required: true, but ledger.witness is empty`,
		`witness = "journal"`:                     `c.toml: invalid config`,
	} {
		_, err := Parse("c.toml", "[ledger]\n"+bad+"\n"+minimal, env)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.HasPrefix(err.Error(), "c.toml: invalid config") {
			t.Errorf("%s: err = %v, want it to name c.toml and %q", bad, err, want)
		}
	}
}
