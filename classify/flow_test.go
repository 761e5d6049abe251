package classify

import (
	"reflect"
	"strings"
	"testing"
)

// TestFlowsCheck is the flow check over labels × classes × flow sets: the
// strictest matching flow wins, and the labels an approval binds are every
// held label a flow to the class names.
func TestFlowsCheck(t *testing.T) {
	written := []Flow{
		{From: "private", To: []Class{Network}, Action: Ask, Reason: "p"},
		{From: "untrusted", To: []Class{Exec, Network}, Action: Deny, Reason: "u"},
		{From: "private", To: []Class{Network, Write}, Action: Deny, Reason: "p2"},
	}
	custom, err := CompileFlows(written, false)
	if err != nil {
		t.Fatal(err)
	}
	defaults, err := CompileFlows(nil, false)
	if err != nil {
		t.Fatal(err)
	}
	off, err := CompileFlows(nil, true)
	if err != nil {
		t.Fatal(err)
	}
	ownSecret, err := CompileFlows([]Flow{{From: Secret, To: []Class{Exec}, Action: Ask}}, false)
	if err != nil {
		t.Fatal(err)
	}
	type want struct {
		action Action // "" : no flow applies
		label  string
		labels []string
	}
	for _, c := range []struct {
		name   string
		flows  *Flows
		labels []string
		class  Class
		want   want
	}{
		{"no labels", custom, nil, Network, want{}},
		{"read is no sink", custom, []string{"private", "untrusted"}, Read, want{}},
		{"stricter of two flows from one label", custom, []string{"private"}, Network, want{Deny, "private", []string{"private"}}},
		{"deny from the other label wins over ask", custom, []string{"private", "untrusted"}, Network, want{Deny, "untrusted", []string{"private", "untrusted"}}},
		{"only the flow naming the class", custom, []string{"private"}, Write, want{Deny, "private", []string{"private"}}},
		{"exec from untrusted", custom, []string{"private", "untrusted"}, Exec, want{Deny, "untrusted", []string{"untrusted"}}},
		{"label with no flow", custom, []string{"other"}, Network, want{}},
		{"default private network", defaults, []string{"private"}, Network, want{Ask, "private", []string{"private"}}},
		{"default private exec", defaults, []string{"private"}, Exec, want{}},
		{"default untrusted exec", defaults, []string{"untrusted"}, Exec, want{Ask, "untrusted", []string{"untrusted"}}},
		{"default untrusted destructive", defaults, []string{"untrusted"}, Destructive, want{Ask, "untrusted", []string{"untrusted"}}},
		{"default untrusted network", defaults, []string{"untrusted"}, Network, want{}},
		{"secret reserved over defaults", defaults, []string{"private", "secret"}, Network, want{Deny, "secret", []string{"private", "secret"}}},
		{"flows off: no private flow", off, []string{"private"}, Network, want{}},
		{"flows off: secret still denies", off, []string{"secret"}, Exec, want{Deny, "secret", []string{"secret"}}},
		{"written flows keep secret", custom, []string{"secret"}, Network, want{Deny, "secret", []string{"secret"}}},
		{"a written secret flow replaces it", ownSecret, []string{"secret"}, Exec, want{Ask, "secret", []string{"secret"}}},
		{"a written secret flow replaces it: network free", ownSecret, []string{"secret"}, Network, want{}},
		{"nil flows: secret only", nil, []string{"secret", "private"}, Network, want{Deny, "secret", []string{"secret"}}},
	} {
		m, ok := c.flows.Check(c.labels, c.class)
		got := want{}
		if ok {
			got = want{m.Action, m.Label, m.Labels}
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: Check(%v, %s) = %+v, want %+v", c.name, c.labels, c.class, got, c.want)
		}
		if ok != c.flows.Sink(c.class) && ok {
			t.Errorf("%s: a flow applied to %s, which Sink says no flow names", c.name, c.class)
		}
	}
}

func TestCompileFlowsErrors(t *testing.T) {
	_, err := CompileFlows([]Flow{
		{From: "", To: []Class{Network}, Action: Ask},
		{From: "Private", To: []Class{Network}, Action: Ask},
		{From: "private", Action: Ask},
		{From: "private", To: []Class{"web"}, Action: Deny},
		{From: "private", To: []Class{Network}, Action: Allow},
		{From: "private", To: []Class{Network}},
	}, true)
	if err == nil {
		t.Fatal("no error")
	}
	for _, w := range []string{
		"flows: flows = [] turns every flow off, and the config also has [[flow]]",
		"flow[1].from: missing",
		`flow[2].from: "Private": a label is`,
		"flow[3].to: missing",
		`flow[4].to: unknown class "web"`,
		`flow[5].action: "allow": a flow only makes a decision stricter`,
		"flow[6].action: missing",
	} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error lacks %q:\n%v", w, err)
		}
	}
}

func TestRuleLabels(t *testing.T) {
	r, err := Compile([]Rule{
		{Server: "fs", Tool: "read_*", Class: Read, Action: Allow, Labels: []string{"untrusted", "private", "private"}},
		{Server: "fs", Resource: "file:///home/**", Action: Allow, Labels: []string{"private"}},
		{Server: "web", Resource: "https://api.example/*", Class: Network, Action: Allow},
	})
	if err != nil {
		t.Fatal(err)
	}
	m, ok := r.Decide("fs", "read_file", map[string]any{})
	if !ok || !reflect.DeepEqual(m.Labels, []string{"private", "untrusted"}) {
		t.Errorf("tool rule labels = %v, %v", m.Labels, ok)
	}
	m, ok = r.DecideResource("fs", "file:///home/me/a")
	if !ok || !reflect.DeepEqual(m.Labels, []string{"private"}) || m.Class != Read {
		t.Errorf("resource rule = %+v, %v", m, ok)
	}
	m, ok = r.DecideResource("web", "https://api.example/q")
	if !ok || m.Class != Network || m.Labels != nil {
		t.Errorf("network resource rule = %+v, %v", m, ok)
	}
	_, err = Compile([]Rule{
		{Server: "fs", Tool: "a", Class: Read, Action: Allow, Labels: []string{}},
		{Server: "fs", Tool: "b", Class: Read, Action: Allow, Labels: []string{"ok", "Bad Label"}},
	})
	for _, w := range []string{"rule[1].labels: empty", `rule[2].labels: "Bad Label": a label is`} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("error lacks %q: %v", w, err)
		}
	}
}
