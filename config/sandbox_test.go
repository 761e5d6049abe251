package config

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/mcp-guard/mcp-guard/sandbox"
)

const sandboxServer = `
[[server]]
name = "fs"
command = ["x"]
[server.sandbox]
`

const sandboxRule = `
[[rule]]
server = "fs"
tool = "*"
class = "read"
action = "allow"
`

func TestConfig_SandboxParsed(t *testing.T) {
	env := mapEnv(map[string]string{"HOME": "/h"})
	for _, tc := range []struct {
		body string
		want sandbox.Policy
	}{
		{`read = ["~/work", "/usr"]` + "\n" + `write = ["$HOME/scratch"]`,
			sandbox.Policy{Read: []string{"/h/work", "/usr"}, Write: []string{"/h/scratch"}, Network: sandbox.Network{Mode: "none"}}},
		{`network = "all"` + "\nbest_effort = true",
			sandbox.Policy{Network: sandbox.Network{Mode: "all"}, BestEffort: true}},
		{`network = { connect = [443, 80], bind = [8080], udp = true }`,
			sandbox.Policy{Network: sandbox.Network{Mode: "ports", Connect: []uint16{443, 80}, Bind: []uint16{8080}, UDP: true}}},
		{`network = {}`, sandbox.Policy{Network: sandbox.Network{Mode: "ports"}}},
	} {
		c, err := Parse("c.toml", sandboxServer+tc.body+sandboxRule, env)
		if err != nil {
			t.Fatalf("%s: %v", tc.body, err)
		}
		got := c.Servers[0].SandboxPolicy()
		if got == nil || !reflect.DeepEqual(*got, tc.want) {
			t.Errorf("%s: policy %+v, want %+v", tc.body, got, tc.want)
		}
	}
	c, err := Parse("c.toml", minimal, env)
	if err != nil || c.Servers[0].SandboxPolicy() != nil {
		t.Fatalf("no [server.sandbox]: policy %v, err %v; want none", c.Servers[0].SandboxPolicy(), err)
	}
}

func TestConfig_SandboxRefusedLocated(t *testing.T) {
	env := mapEnv(map[string]string{"HOME": "/h"})
	for body, want := range map[string]string{
		`reed = ["/x"]`:                          "server[1].sandbox.reed: unknown key",
		`read = ["work"]`:                        `server[1] (fs).sandbox.read: "work": use an absolute path`,
		`write = ["/"]`:                          `server[1] (fs).sandbox.write: "/" is the whole filesystem`,
		`network = "some"`:                       `server[1] (fs).sandbox.network: "some": want "none", "all"`,
		`network = { connect = [0] }`:            "server[1] (fs).sandbox.network: connect: 0 is not a port number",
		`network = { connect = [443], dns = 1 }`: "server[1] (fs).sandbox.network: dns: unknown key",
		`network = { udp = "yes" }`:              "server[1] (fs).sandbox.network: udp: want true or false",
		`network = 1`:                            "server[1] (fs).sandbox.network: want",
	} {
		_, err := Parse("c.toml", sandboxServer+body+sandboxRule, env)
		var ce *Error
		if !errors.As(err, &ce) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v, want a config error with %q", body, err, want)
		}
	}
	url := "[[server]]\nname = \"fs\"\nurl = \"https://example.com/mcp\"\n[server.sandbox]\nread = [\"/x\"]\n" + sandboxRule
	if _, err := Parse("c.toml", url, env); err == nil || !strings.Contains(err.Error(), "server[1] (fs).sandbox: a sandbox confines a process mcp-guard starts") {
		t.Errorf("sandbox on a url server: got %v, want refused", err)
	}
}
