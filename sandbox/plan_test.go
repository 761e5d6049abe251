package sandbox

import (
	"strings"
	"testing"
)

func TestPlanFor_WhatEachABIEnforces(t *testing.T) {
	none := Policy{Network: Network{Mode: NetNone}}
	all := Policy{Network: Network{Mode: NetAll}}
	for _, tc := range []struct {
		name     string
		p        Policy
		goos     string
		abi      int
		seccomp  bool
		complete bool
		missing  string
	}{
		{"abi 7 none", none, "linux", 7, true, true, ""},
		{"abi 6 none", none, "linux", 6, true, true, ""},
		{"abi 5 none", none, "linux", 5, true, false, "scopes (Landlock ABI 6)"},
		{"abi 3 none", none, "linux", 3, true, false, "TCP bind/connect rules (Landlock ABI 4)"},
		{"abi 2 all", all, "linux", 2, true, false, "truncate rule (Landlock ABI 3)"},
		{"abi 0", all, "linux", 0, true, false, "filesystem rules (Landlock ABI 1)"},
		{"abi 6 all, no seccomp", all, "linux", 6, false, true, ""},
		{"abi 7 none, no seccomp", none, "linux", 7, false, false, "seccomp socket filter (this architecture)"},
		{"darwin", none, "darwin", 0, false, false, "a sandbox on darwin"},
	} {
		pl := PlanFor(tc.p, tc.goos, tc.abi, tc.seccomp)
		if pl.Complete() != tc.complete || !strings.Contains(strings.Join(pl.Missing, ", "), tc.missing) {
			t.Errorf("%s: complete %v, missing %q; want %v, %q", tc.name, pl.Complete(), pl.Missing, tc.complete, tc.missing)
		}
	}
	pl := PlanFor(none, "linux", 3, true)
	if msg := pl.Refusal().Error(); !strings.Contains(msg, "Landlock ABI found: 3") || !strings.Contains(msg, "best_effort = true") {
		t.Errorf("refusal: %s", msg)
	}
	if msg := PlanFor(none, "darwin", 0, false).Refusal().Error(); !strings.Contains(msg, "not available on darwin") {
		t.Errorf("darwin refusal: %s", msg)
	}
}

func TestLaunch_ArgumentsRoundTrip(t *testing.T) {
	p := Policy{Read: []string{"/r"}, Network: Network{Mode: NetNone}}
	argv := Launch("/bin/mcp-guard", p, 3, "/usr/bin/node", []string{"node", "--", "x"})
	if argv[0] != "/bin/mcp-guard" || argv[1] != Command {
		t.Fatalf("argv %q", argv)
	}
	got, abiMax, program, rest, err := parseLaunch(argv[2:])
	if err != nil || abiMax != 3 || program != "/usr/bin/node" || strings.Join(rest, " ") != "node -- x" || got.Digest() != p.Digest() {
		t.Fatalf("parsed %+v %d %q %q %v", got, abiMax, program, rest, err)
	}
	for _, bad := range [][]string{{}, {"{}"}, {"--abi-max", "x", "{}", "/p", "--", "p"}, {`{"network":{"mode":"none"}}`, "/p", "p"}} {
		if _, _, _, _, err := parseLaunch(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}
