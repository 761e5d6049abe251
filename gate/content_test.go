package gate

import (
	"strings"
	"testing"

	"github.com/mcp-guard/mcp-guard/classify"
	"github.com/mcp-guard/mcp-guard/config"
)

func contentGate(t *testing.T) *Gate {
	t.Helper()
	rules, err := classify.Compile([]classify.Rule{
		{Server: "every", Prompt: "simple-*", Action: classify.Allow},
		{Server: "every", Prompt: "args-prompt", Action: classify.Allow,
			When: map[string]classify.Predicate{"/city": {OneOf: []any{"Paris"}}}},
		{Server: "every", Prompt: "complex-*", Action: classify.Deny, Reason: "too long"},
		{Server: "fs", Resource: "file:///work/**", Action: classify.Allow},
		{Server: "fs", Resource: "file:///etc/**", Action: classify.Deny, Reason: "system files"},
		{Server: "fs", Tool: "*", Class: classify.Read, Action: classify.Allow},
	})
	if err != nil {
		t.Fatal(err)
	}
	return New(rules)
}

// Prompt gets and resource reads are decided by their own rules, fail
// closed, and read their arguments strictly; a tool rule decides neither.
func TestDecideContent_AllowDenyAndFailClosed(t *testing.T) {
	g := contentGate(t)
	for _, tc := range []struct {
		prompt, args string
		want         Outcome
		rule         int
		msg          string
	}{
		{"simple-prompt", ``, Allow, 1, ""},
		{"simple-prompt", `{}`, Allow, 1, ""},
		{"args-prompt", `{"city":"Paris"}`, Allow, 2, ""},
		{"args-prompt", `{"city":"Rome"}`, Deny, 0, "every/prompt:args-prompt denied: no rule allows these arguments"},
		{"complex-prompt", `{}`, Deny, 3, "denied by rule 3: too long"},
		{"other", `{}`, Deny, 0, "no rule allows"},
		{"simple-prompt", `{"n":1}`, Invalid, 0, `not all strings ("n" is not)`},
		{"simple-prompt", `{"a":"x","a":"y"}`, Invalid, 0, "duplicate"},
		{"simple-prompt", `["x"]`, Invalid, 0, "not a JSON object"},
	} {
		d := g.DecidePrompt("every", tc.prompt, []byte(tc.args))
		if d.Outcome != tc.want || d.Rule != tc.rule || !strings.Contains(d.Message, tc.msg) {
			t.Errorf("prompt %s %s: got %v rule %d %q; want %v rule %d containing %q", tc.prompt, tc.args, d.Outcome, d.Rule, d.Message, tc.want, tc.rule, tc.msg)
		}
		if d.Outcome != Allow && d.Message == "" {
			t.Errorf("prompt %s %s: a refusal without a message", tc.prompt, tc.args)
		}
	}
	for _, tc := range []struct {
		uri  string
		want Outcome
		rule int
		msg  string
	}{
		{"file:///work/a.txt", Allow, 4, ""},
		{"file:///work/../etc/passwd", Deny, 5, "denied by rule 5: system files"},
		{"file:///work/%2e%2e/home/me/.ssh/id_rsa", Deny, 0, "fs/resource:file:///work/%2e%2e/home/me/.ssh/id_rsa denied: no rule allows this URI"},
		{"file://evil/work/a", Deny, 0, "no rule allows"},
		{"https://example.com/", Deny, 0, "no rule allows"},
	} {
		d := g.DecideResource("fs", tc.uri)
		if d.Outcome != tc.want || d.Rule != tc.rule || !strings.Contains(d.Message, tc.msg) || d.Class != classify.Read {
			t.Errorf("read %s: got %v rule %d class %q %q; want %v rule %d containing %q", tc.uri, d.Outcome, d.Rule, d.Class, d.Message, tc.want, tc.rule, tc.msg)
		}
	}
	if _, ok := g.ExposablePrompt("fs", "x"); ok {
		t.Error("a tool rule exposes a prompt")
	}
	if _, ok := g.ExposableResource("fs", "file:///work/x"); !ok {
		t.Error("a listed resource the rules allow is not exposable")
	}
	if _, ok := g.ExposableTemplate("fs", "file:///work/{name}"); !ok {
		t.Error("a template under an allowed tree is not exposable")
	}
}

// A session's limits hold for prompts and resources too, counted per
// prompt and per URI.
func TestLimits_ContentCountsLikeCalls(t *testing.T) {
	s := contentGate(t).NewSession(config.Limits{CallsPerSession: 100, CallsPerToolPerMinute: 100, IdenticalCallRepeats: 2, ConsecutiveDenials: 3}, nil)
	for i := range 2 {
		if d := s.DecideResource("fs", "file:///work/a"); d.Outcome != Allow {
			t.Fatalf("read %d: %v %s", i+1, d.Outcome, d.Message)
		}
	}
	d := s.DecideResource("fs", "file:///work/a")
	if d.Outcome != Deny || d.Limit != LimitIdenticalRepeats || !strings.Contains(d.Message, "fs/resource:file:///work/a") {
		t.Fatalf("third identical read: %+v", d)
	}
	if d := s.DecideResource("fs", "file:///work/b"); d.Outcome != Allow {
		t.Fatalf("another URI: %+v", d)
	}
	if d := s.DecidePrompt("every", "simple-prompt", nil); d.Outcome != Allow {
		t.Fatalf("prompt: %+v", d)
	}
	s.DecidePrompt("every", "complex-prompt", nil)
	s.DecideResource("fs", "file:///etc/passwd")
	s.DecidePrompt("every", "nope", nil)
	if d := s.DecidePrompt("every", "simple-prompt", nil); d.Outcome != Refuse || d.Limit != LimitConsecutiveDenials {
		t.Fatalf("after three refusals in a row: %+v", d)
	}
}
