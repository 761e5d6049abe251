package classify

import (
	"strings"
	"testing"
)

func contentRules(t *testing.T) *Rules {
	t.Helper()
	r, err := Compile([]Rule{
		{Server: "every", Prompt: "simple-*", Action: Allow},
		{Server: "every", Prompt: "args-prompt", Action: Allow, When: map[string]Predicate{"/city": {OneOf: []any{"Paris", "Oslo"}}}},
		{Server: "every", Prompt: "*", Action: Deny, Reason: "not that prompt"},
		{Server: "fs", Resource: "file:///home/me/work/**", Action: Allow},
		{Server: "fs", Resource: "file:///home/me/work/secret/**", Action: Deny},
		{Server: "every", Resource: "demo://resource/static/*", Class: Read, Action: Allow},
		{Server: "every", Resource: "DEMO://resource/dynamic/text/*", Action: Allow},
		{Server: "*", Resource: "fi*:///etc/**", Action: Allow}, // a glob, not a path pattern
		{Server: "*", Tool: "*", Class: Write, Action: Ask},
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Prompt rules decide prompts only, with their When over the arguments;
// tool rules never expose a prompt and prompt rules never a tool.
func TestPromptRules(t *testing.T) {
	r := contentRules(t)
	if m, ok := r.ExposablePrompt("every", "simple-prompt"); !ok || m.Rule != 1 || m.Action != Allow || m.Class != Read {
		t.Errorf("ExposablePrompt(simple-prompt) = %+v, %v", m, ok)
	}
	if m, ok := r.ExposablePrompt("every", "args-prompt"); !ok || m.Rule != 2 {
		t.Errorf("ExposablePrompt(args-prompt) = %+v, %v; want rule 2 (When ignored)", m, ok)
	}
	if _, ok := r.ExposablePrompt("fs", "simple-prompt"); ok {
		t.Error("a prompt of a server no prompt rule names is exposable")
	}
	if m, ok := r.DecidePrompt("every", "args-prompt", doc(t, `{"city":"Paris"}`)); !ok || m.Rule != 2 || m.Action != Allow {
		t.Errorf("DecidePrompt(Paris) = %+v, %v", m, ok)
	}
	if m, ok := r.DecidePrompt("every", "args-prompt", doc(t, `{"city":"Rome"}`)); !ok || m.Rule != 3 || m.Action != Deny || m.Reason != "not that prompt" {
		t.Errorf("DecidePrompt(Rome) = %+v, %v; want rule 3's deny", m, ok)
	}
	// The catch-all tool rule is not a prompt rule, nor the reverse.
	if m, ok := r.ExposablePrompt("other", "x"); ok {
		t.Errorf("tool rule exposes a prompt: %+v", m)
	}
	if m, ok := r.Exposable("every", "simple-prompt"); !ok || m.Rule != 9 {
		t.Errorf("Exposable(tool simple-prompt) = %+v, %v; want the tool rule 9", m, ok)
	}
	if m, ok := r.Decide("every", "simple-prompt", doc(t, `{}`)); !ok || m.Rule != 9 {
		t.Errorf("Decide(tool) = %+v, %v; want the tool rule 9", m, ok)
	}
	if _, _, steps := r.Explain("every", "x", doc(t, `{}`)); len(steps) != 1 || steps[0].Rule != 9 {
		t.Errorf("Explain tried %+v; want only the tool rule", steps)
	}
}

// Resource rules: file: patterns match the decoded, cleaned path, so no
// spelling of a path climbs out of the allowed tree; other schemes are
// globs with the scheme case-folded; an uninterpretable file: URI matches
// nothing.
func TestDecideResource(t *testing.T) {
	r := contentRules(t)
	for _, tc := range []struct {
		server, uri string
		rule        int // 0: no rule matches
	}{
		{"fs", "file:///home/me/work/notes.txt", 1 + 3},
		{"fs", "file:///home/me/work", 4},
		{"fs", "file://localhost/home/me/work/a", 4},
		{"fs", "FILE:///home/me/work/a", 4},
		{"fs", "file:/home/me/work/a", 4},
		{"fs", "file:///home/me/work/a%20b", 4},
		{"fs", "file:///home/me/work/secret/key", 4}, // rule 4 comes first
		{"fs", "file:///home/me/work/../other/x", 0},
		{"fs", "file:///home/me/work/%2e%2e/%2E%2E/etc/passwd", 0},
		{"fs", "file:///home/me/work/a%2F..%2F..%2Fx", 0},
		{"fs", "file:///home/me/work//..//../x", 0},
		{"fs", "file://evil.example/home/me/work/a", 0},
		{"fs", "file:///home/me/work/a?x=1", 0},
		{"fs", "file:///home/me/work/a#frag", 0},
		{"fs", "file:///home/me/work/%00", 0},
		{"fs", "file:///home/me/work/%zz", 0},
		{"fs", "file://localhost", 0},
		{"fs", "file:home/me/work/a", 0},
		{"fs", "https:///home/me/work/a", 0},
		{"every", "file:///home/me/work/a", 0},               // another server's rule
		{"every", "demo://resource/static/document/a.md", 6}, // '*' crosses '/' outside file: patterns
		{"every", "demo://resource/static/a.md", 6},
		{"every", "Demo://resource/static/a.md", 6},
		{"every", "demo://resource/dynamic/text/1", 7},
		{"every", "demo://resource/dynamic/TEXT/1", 0},
		// A glob that covers file: URIs is matched against the normal form:
		// ".." is resolved before any pattern sees the URI.
		{"x", "file:///etc/hosts", 8},
		{"x", "file:///etc/../root/.ssh/id_rsa", 0},
		{"x", "file:///etc/%2e%2e/root/x", 0},
	} {
		m, ok := r.DecideResource(tc.server, tc.uri)
		if tc.rule == 0 {
			if ok {
				t.Errorf("DecideResource(%s, %q) = rule %d; want no match", tc.server, tc.uri, m.Rule)
			}
			continue
		}
		if !ok || m.Rule != tc.rule {
			t.Errorf("DecideResource(%s, %q) = %+v, %v; want rule %d", tc.server, tc.uri, m, ok, tc.rule)
		}
	}
	if _, ok := r.DecideResource("fs", "file:///home/me/work/x"); !ok {
		t.Fatal("sanity")
	}
	// A template is shown when a pattern matches its text.
	if m, ok := r.ExposableTemplate("every", "demo://resource/dynamic/text/{resourceId}"); !ok || m.Rule != 7 {
		t.Errorf("ExposableTemplate(text) = %+v, %v", m, ok)
	}
	if _, ok := r.ExposableTemplate("every", "demo://resource/dynamic/blob/{resourceId}"); ok {
		t.Error("ExposableTemplate(blob) matched no rule's pattern but is exposable")
	}
	if m, ok := r.ExposableTemplate("fs", "file:///home/me/work/{+path}"); !ok || m.Rule != 4 {
		t.Errorf("ExposableTemplate(file) = %+v, %v", m, ok)
	}
	// Resource rules expose no tool or prompt.
	if _, ok := r.ExposablePrompt("fs", "x"); ok {
		t.Error("a resource rule exposes a prompt")
	}
	var nilRules *Rules
	if _, ok := nilRules.DecideResource("fs", "file:///x"); ok {
		t.Error("nil rules matched")
	}
}

func TestNormalURI(t *testing.T) {
	for in, want := range map[string]string{
		"file:///a/b/../c":          "file:///a/c",
		"FILE://LOCALHOST/a/%62":    "file:///a/b",
		"file:/a":                   "file:///a",
		"file:///":                  "file:///",
		"HTTPS://Example.com/A/../": "https://Example.com/A/../",
		"no-scheme/../x":            "no-scheme/../x",
		"1abc:x":                    "1abc:x",
	} {
		got, ok := normalURI(in)
		if !ok || got != want {
			t.Errorf("normalURI(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
}

func TestCompileContentRuleErrors(t *testing.T) {
	_, err := Compile([]Rule{
		{Server: "a", Tool: "t", Prompt: "p", Class: Read, Action: Allow},
		{Server: "a", Prompt: "p", Action: Ask},
		{Server: "a", Prompt: "p", Class: "send", Action: Allow},
		{Server: "a", Resource: "file://host/x", Action: Allow},
		{Server: "a", Resource: "file:///a/../b", Action: Allow},
		{Server: "a", Resource: "x://[", Action: Deny},
		{Server: "a", Resource: "file:///a/**", Action: Allow, When: map[string]Predicate{"/x": {Equals: "y"}}},
		{Server: "a", Prompt: "[!a]", Action: Allow},
	})
	if err == nil {
		t.Fatal("no error")
	}
	want := []string{
		`rule[1].prompt: a rule names exactly one of tool, prompt and resource (this one names tool and prompt)`,
		`rule[2].action: "ask" is for tool rules only: a prompt rule allows or denies`,
		`rule[3].class: unknown class "send" (want read, write, destructive, network or exec)`,
		`rule[4].resource: bad pattern "file://host/x": a file: pattern is file:///ABSOLUTE/PATH/GLOB (three slashes, no host)`,
		`rule[5].resource: bad pattern "file:///a/../b": not clean (path.Clean gives "/b")`,
		`rule[6].resource: bad pattern "x://[": syntax error in pattern`,
		`rule[7].when: a resource rule has no when: its URI pattern is the condition`,
		`rule[8].prompt: bad glob "[!a]": syntax error in pattern`,
	}
	got := err.Error()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("Compile error lacks %q; got:\n%s", w, got)
		}
	}
	if n := len(strings.Split(got, "\n")); n != len(want) {
		t.Errorf("%d errors, want %d:\n%s", n, len(want), got)
	}
}

// Lint compares a rule only with earlier rules of its own kind.
func TestLintContentRules(t *testing.T) {
	r := contentRules(t)
	got := strings.Join(r.Lint([]string{"every", "fs"}), "\n")
	if strings.Contains(got, "rule[9]") || strings.Contains(got, "rule[1]:") {
		t.Errorf("rules of different kinds reported as shadowing each other:\n%s", got)
	}
	r2, err := Compile([]Rule{
		{Server: "*", Resource: "*", Action: Deny},
		{Server: "fs", Resource: "file:///x/**", Action: Allow},
		{Server: "*", Prompt: "*", Action: Deny},
		{Server: "fs", Prompt: "p", Action: Allow},
	})
	if err != nil {
		t.Fatal(err)
	}
	got = strings.Join(r2.Lint([]string{"fs"}), "\n")
	if !strings.Contains(got, "rule[2]: rule[1] comes first") || !strings.Contains(got, "rule[4]: rule[3] comes first") {
		t.Errorf("catch-all prompt and resource rules do not shadow:\n%s", got)
	}
}
