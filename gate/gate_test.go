package gate

import (
	"strings"
	"testing"

	"github.com/mcp-guard/mcp-guard/classify"
	"github.com/mcp-guard/mcp-guard/pin"
)

func str(s string) *string { return &s }

func testGate(t *testing.T) *Gate {
	t.Helper()
	rules, err := classify.Compile([]classify.Rule{
		{Server: "fs", Tool: "write_file", Class: classify.Write, Action: classify.Allow,
			When: map[string]classify.Predicate{"/path": {Path: str("/work/scratch/**")}}},
		{Server: "fs", Tool: "read_*", Class: classify.Read, Action: classify.Allow},
		{Server: "fs", Tool: "delete_*", Class: classify.Destructive, Action: classify.Deny, Reason: "never"},
		{Server: "fs", Tool: "move_file", Class: classify.Write, Action: classify.Ask},
	})
	if err != nil {
		t.Fatal(err)
	}
	return New(rules)
}

func TestDecide_AllowDenyAskAndFailClosed(t *testing.T) {
	g := testGate(t)
	for _, tc := range []struct {
		tool, args string
		want       Outcome
		rule       int
		msg        string
	}{
		{"read_file", `{"path":"/etc/passwd"}`, Allow, 2, ""},
		{"read_file", ``, Allow, 2, ""},
		{"write_file", `{"path":"/work/scratch/a.txt"}`, Allow, 1, ""},
		{"write_file", `{"path":"/work/scratch/../../etc/passwd"}`, Deny, 0, "no rule allows these arguments"},
		{"write_file", `{"path":"/work/other"}`, Deny, 0, "no rule allows"},
		{"delete_file", `{}`, Deny, 3, "denied by rule 3: never"},
		{"move_file", `{}`, Ask, 4, "needs the operator's approval (rule 4)"},
		{"unknown", `{}`, Deny, 0, "no rule allows"},
		{"read_file", `{"path":`, Invalid, 0, "not valid JSON"},
		{"read_file", `{"a":1} {"b":2}`, Invalid, 0, "not valid JSON"},
		{"read_file", `[1]`, Invalid, 0, "not a JSON object"},
		{"read_file", `null`, Invalid, 0, "not a JSON object"},
		{"read_file", `{"path":"/a","path":"/b"}`, Invalid, 0, "duplicate"},
		{"read_file", `{"path":"/a","\u0070ath":"/b"}`, Invalid, 0, "duplicate"},
		{"read_file", `{"n":9007199254740993}`, Invalid, 0, "9007199254740993"},
		{"read_file", "{\"s\":\"\xff\"}", Invalid, 0, "UTF-8"},
	} {
		d := g.Decide("fs", tc.tool, anyObject(t), []byte(tc.args))
		if d.Outcome != tc.want || d.Rule != tc.rule || !strings.Contains(d.Message, tc.msg) {
			t.Errorf("%s %s: got %v rule %d %q; want %v rule %d containing %q", tc.tool, tc.args, d.Outcome, d.Rule, d.Message, tc.want, tc.rule, tc.msg)
		}
		if d.Outcome != Allow && d.Message == "" {
			t.Errorf("%s %s: a refusal without a message", tc.tool, tc.args)
		}
	}
}

func anyObject(t *testing.T) *pin.Schema {
	t.Helper()
	s, err := pin.CompileSchema([]byte(`{"type":"object"}`), pin.SchemaLimits{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Arguments are validated against the pinned schema before any rule; a
// failure names the JSON path and the reason.
func TestDecide_PinnedSchemaValidatesArguments(t *testing.T) {
	g := testGate(t)
	s, err := pin.CompileSchema([]byte(`{"type":"object","properties":{"path":{"type":"string","minLength":1}},"required":["path"],"additionalProperties":false}`), pin.SchemaLimits{})
	if err != nil {
		t.Fatal(err)
	}
	if d := g.Decide("fs", "read_file", s, []byte(`{"path":"/a"}`)); d.Outcome != Allow {
		t.Fatalf("valid arguments: %+v", d)
	}
	for args, want := range map[string]string{
		`{}`:                     "missing property 'path'",
		`{"path":""}`:            "at /path",
		`{"path":1}`:             "at /path",
		`{"path":"/a","x":true}`: "additional properties",
	} {
		d := g.Decide("fs", "read_file", s, []byte(args))
		if d.Outcome != Invalid || !strings.Contains(d.Message, want) {
			t.Errorf("%s: %v %q, want invalid naming %q", args, d.Outcome, d.Message, want)
		}
	}
	if d := g.Decide("fs", "read_file", nil, []byte(`{}`)); d.Outcome != Refuse {
		t.Fatalf("no pinned schema: %+v, want refuse", d)
	}
}

func TestDecision_ZeroValueFailsClosed(t *testing.T) {
	var d Decision
	if d.Outcome == Allow || d.Outcome.String() != "refuse" {
		t.Fatalf("zero Decision is %v", d.Outcome)
	}
}

// Path rules see the path the upstream will see: traversal is cleaned
// before matching, and look-alike characters are different characters.
func TestDecide_PathTricksDoNotMatchTheAllowedTree(t *testing.T) {
	g := testGate(t)
	for _, p := range []string{
		`/work/scratch/../../etc/passwd`,
		`/work/scratch/../secret`,
		`/work/scratch\u2215..\u2215..\u2215etc`, // DIVISION SLASH is not '/': a single odd name, but not under /work/scratch/ either
		`/work/scr\u0430tch/a`,                   // Cyrillic a
		`/work/scratch\u0000/a`,
		`work/scratch/a`,
		`/work//scratch/../../etc`,
		`/work/scratch/a/../../..`,
	} {
		d := g.Decide("fs", "write_file", anyObject(t), []byte(`{"path":"`+p+`"}`))
		if d.Outcome == Allow {
			t.Errorf("path %s allowed by the scratch rule", p)
		}
	}
	for _, p := range []string{`/work/scratch/a`, `/work/scratch/./a/../b`, `/work//scratch/c/`} {
		if d := g.Decide("fs", "write_file", anyObject(t), []byte(`{"path":"`+p+`"}`)); d.Outcome != Allow {
			t.Errorf("path %s: %+v", p, d)
		}
	}
	// Missing and mistyped arguments do not match a predicate.
	for _, args := range []string{`{}`, `{"path":7}`, `{"path":["/work/scratch/a"]}`, `{"path":null}`} {
		if d := g.Decide("fs", "write_file", anyObject(t), []byte(args)); d.Outcome == Allow {
			t.Errorf("args %s allowed", args)
		}
	}
}
