package config

import (
	"strings"
	"testing"
)

const askRules = `
[[server]]
name = "db"
command = ["x"]
[[rule]]
server = "db"
tool = "mv"
class = "write"
action = "ask"
[[rule]]
server = "db"
tool = "run"
class = "exec"
action = "ask"
[[rule]]
server = "db"
tool = "drop"
class = "destructive"
action = "ask"
`

// Where held calls are asked about: the terminal alone by default; with
// in_host the host too, except for exec and destructive rules unless
// host_may_approve names their class; a rule's ask_in overrides.
func TestConfig_AskIn(t *testing.T) {
	env := mapEnv(map[string]string{"HOME": "/h"})
	for _, tc := range []struct {
		name, src string
		want      []string // rules 1, 2, 3
	}{
		{"default", askRules, []string{"terminal", "terminal", "terminal"}},
		{"in_host", "[approvals]\nin_host = true\n" + askRules, []string{"both", "terminal", "terminal"}},
		{"in_host, exec named", "[approvals]\nin_host = true\nhost_may_approve = [\"exec\"]\n" + askRules, []string{"both", "both", "terminal"}},
		{"host_may_approve alone", "[approvals]\nhost_may_approve = [\"destructive\"]\n" + askRules, []string{"terminal", "terminal", "terminal"}},
		{"ask_in per rule", strings.Replace(askRules, "tool = \"mv\"\n", "tool = \"mv\"\nask_in = \"host\"\n", 1), []string{"host", "terminal", "terminal"}},
		{"ask_in terminal over in_host", "[approvals]\nin_host = true\n" + strings.Replace(askRules, "tool = \"mv\"\n", "tool = \"mv\"\nask_in = \"terminal\"\n", 1), []string{"terminal", "terminal", "terminal"}},
		{"ask_in on a named exec", "[approvals]\nhost_may_approve = [\"exec\"]\n" + strings.Replace(askRules, "tool = \"run\"\n", "tool = \"run\"\nask_in = \"both\"\n", 1), []string{"terminal", "both", "terminal"}},
	} {
		c, err := Parse("c.toml", tc.src, env)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		for i, want := range tc.want {
			if got := c.AskIn(i + 1); got != want {
				t.Errorf("%s: rule %d asked in %q, want %q", tc.name, i+1, got, want)
			}
		}
		if got := c.AskIn(0); got != AskInTerminal {
			t.Errorf("%s: no rule asked in %q", tc.name, got)
		}
	}
}

// A host is not the operator's terminal: ask_in = "host" or "both" on an
// exec or destructive rule is refused unless host_may_approve names the
// class, and host_may_approve names only those classes.
func TestConfig_AskInRefused(t *testing.T) {
	env := mapEnv(map[string]string{"HOME": "/h"})
	for src, want := range map[string]string{
		strings.Replace(askRules, "tool = \"run\"\n", "tool = \"run\"\nask_in = \"host\"\n", 1):                                                    `rule[2].ask_in: "host": a host is not the operator's terminal`,
		strings.Replace(askRules, "tool = \"drop\"\n", "tool = \"drop\"\nask_in = \"both\"\n", 1):                                                  `rule[3].ask_in: "both"`,
		"[approvals]\nhost_may_approve = [\"exec\"]\n" + strings.Replace(askRules, "tool = \"drop\"\n", "tool = \"drop\"\nask_in = \"host\"\n", 1): `host_may_approve names "destructive"`,
		strings.Replace(askRules, "tool = \"mv\"\n", "tool = \"mv\"\nask_in = \"window\"\n", 1):                                                    `rule[1].ask_in: "window": want terminal, host, both`,
		"[approvals]\nhost_may_approve = [\"write\"]\n" + askRules:                                                                                 `approvals.host_may_approve[1]: "write": name exec or destructive`,
		"[approvals]\nin_host = \"yes\"\n" + askRules:                                                                                              `in_host`,
		"[approvals]\nin_ui = true\n" + askRules:                                                                                                   `approvals.in_ui: unknown key`,
	} {
		if _, err := Parse("c.toml", src, env); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v\nwant an error naming %q", err, want)
		}
	}
}
