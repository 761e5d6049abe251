package classify

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"sync"
	"testing"
)

func TestParseClassAction(t *testing.T) {
	for _, s := range []string{"read", "write", "destructive", "network", "exec"} {
		if c, err := ParseClass(s); err != nil || string(c) != s {
			t.Errorf("ParseClass(%q) = %q, %v", s, c, err)
		}
	}
	for _, s := range []string{"", "Read", "READ", "reads", " read", "allow"} {
		if _, err := ParseClass(s); err == nil {
			t.Errorf("ParseClass(%q) accepted", s)
		}
	}
	for _, s := range []string{"allow", "ask", "deny"} {
		if a, err := ParseAction(s); err != nil || string(a) != s {
			t.Errorf("ParseAction(%q) = %q, %v", s, a, err)
		}
	}
	for _, s := range []string{"", "Allow", "block", "read"} {
		if _, err := ParseAction(s); err == nil {
			t.Errorf("ParseAction(%q) accepted", s)
		}
	}
}

// designRules are the rules of the config contract in DESIGN.md.
func designRules(t testing.TB) *Rules {
	t.Helper()
	r, err := Compile([]Rule{
		{Server: "fs", Tool: "write_file", Class: Write, Action: Allow,
			When: map[string]Predicate{"/path": {Path: sp("/home/me/work/scratch/**")}}},
		{Server: "fs", Tool: "read_*", Class: Read, Action: Allow},
		{Server: "*", Tool: "*", Class: Write, Action: Ask},
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestFirstMatchWins(t *testing.T) {
	r := designRules(t)
	tests := []struct {
		server, tool, args string
		rule               int
		class              Class
		action             Action
	}{
		{"fs", "write_file", `{"path": "/home/me/work/scratch/a.txt"}`, 1, Write, Allow},
		{"fs", "write_file", `{"path": "/home/me/work/scratch/../../.ssh/authorized_keys"}`, 3, Write, Ask},
		{"fs", "write_file", `{"path": "/etc/passwd"}`, 3, Write, Ask},
		{"fs", "write_file", `{}`, 3, Write, Ask},
		{"fs", "read_file", `{"path": "/etc/passwd"}`, 2, Read, Allow},
		{"fs", "read_text_file", `{}`, 2, Read, Allow},
		{"fs", "list_directory", `{}`, 3, Write, Ask},
		{"db", "read_file", `{}`, 3, Write, Ask},
		{"fsx", "read_file", `{}`, 3, Write, Ask},
	}
	for _, tt := range tests {
		m, ok := r.Decide(tt.server, tt.tool, doc(t, tt.args))
		want := Match{Rule: tt.rule, Class: tt.class, Action: tt.action}
		if !ok || !reflect.DeepEqual(m, want) {
			t.Errorf("Decide(%s, %s, %s) = %+v, %v; want %+v", tt.server, tt.tool, tt.args, m, ok, want)
		}
	}

	// Order matters: the same rules reversed let the catch-all win.
	r2, err := Compile([]Rule{
		{Server: "*", Tool: "*", Class: Destructive, Action: Deny, Reason: "no"},
		{Server: "fs", Tool: "read_*", Class: Read, Action: Allow},
	})
	if err != nil {
		t.Fatal(err)
	}
	m, ok := r2.Decide("fs", "read_file", doc(t, `{}`))
	if want := (Match{Rule: 1, Class: Destructive, Action: Deny, Reason: "no"}); !ok || !reflect.DeepEqual(m, want) {
		t.Errorf("reversed: %+v, %v; want %+v", m, ok, want)
	}
}

func TestNoRuleFailsClosed(t *testing.T) {
	r, err := Compile([]Rule{
		{Server: "fs", Tool: "read_*", Class: Read, Action: Allow},
		{Server: "fs", Tool: "write_file", Class: Write, Action: Allow,
			When: map[string]Predicate{"/path": {Path: sp("/tmp/**")}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ server, tool, args string }{
		{"fs", "delete_file", `{}`},
		{"other", "read_file", `{}`},
		{"fs", "write_file", `{"path": "/etc/x"}`},
		{"fs", "write_file", `{"path": 1}`},
		{"", "", `{}`},
	} {
		if m, ok := r.Decide(c.server, c.tool, doc(t, c.args)); ok || !reflect.DeepEqual(m, Match{}) {
			t.Errorf("Decide(%s, %s, %s) = %+v, %v; want no match", c.server, c.tool, c.args, m, ok)
		}
	}
	var nilRules *Rules
	if _, ok := nilRules.Decide("fs", "read_file", nil); ok {
		t.Error("nil Rules decided")
	}
	if _, ok := nilRules.Exposable("fs", "read_file"); ok {
		t.Error("nil Rules exposed")
	}
	if nilRules.Len() != 0 || nilRules.Lint([]string{"fs"}) != nil {
		t.Error("nil Rules Len/Lint")
	}
	empty, err := Compile(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := empty.Exposable("fs", "read_file"); ok {
		t.Error("empty Rules exposed")
	}
}

func TestExposableVsDecide(t *testing.T) {
	r, err := Compile([]Rule{
		{Server: "fs", Tool: "write_file", Class: Write, Action: Allow, Reason: "scratch",
			When: map[string]Predicate{"/path": {Path: sp("/tmp/**")}}},
		{Server: "fs", Tool: "read_*", Class: Read, Action: Allow},
		{Server: "db", Tool: "*", Class: Destructive, Action: Deny, Reason: "never"},
	})
	if err != nil {
		t.Fatal(err)
	}
	// Exposable ignores When: write_file is shown, classified by rule 1...
	m, ok := r.Exposable("fs", "write_file")
	if want := (Match{Rule: 1, Class: Write, Action: Allow, Reason: "scratch"}); !ok || !reflect.DeepEqual(m, want) {
		t.Errorf("Exposable(fs, write_file) = %+v, %v; want %+v", m, ok, want)
	}
	// ...but a call outside /tmp matches no rule and fails closed.
	if m, ok := r.Decide("fs", "write_file", doc(t, `{"path": "/etc/passwd"}`)); ok {
		t.Errorf("Decide outside /tmp = %+v", m)
	}
	if m, ok := r.Decide("fs", "write_file", doc(t, `{"path": "/tmp/x"}`)); !ok || m.Rule != 1 {
		t.Errorf("Decide inside /tmp = %+v, %v", m, ok)
	}
	// A denied tool is still exposable (the call is refused with a reason).
	if m, ok := r.Exposable("db", "drop"); !ok || m.Action != Deny || m.Reason != "never" {
		t.Errorf("Exposable(db, drop) = %+v, %v", m, ok)
	}
	// No rule by name: never exposed.
	for _, c := range [][2]string{{"fs", "delete_file"}, {"web", "fetch"}, {"fs", "read"}, {"fsx", "read_file"}} {
		if m, ok := r.Exposable(c[0], c[1]); ok {
			t.Errorf("Exposable(%s, %s) = %+v", c[0], c[1], m)
		}
	}
	if r.Len() != 3 {
		t.Errorf("Len = %d", r.Len())
	}
}

func TestCompileErrors(t *testing.T) {
	rules := []Rule{
		{Server: "fs", Tool: "read_file", Class: Read, Action: Allow},
		{Server: "fs", Tool: "x", Class: Read, Action: Allow, When: map[string]Predicate{
			"/path": {Regex: sp("(")},
			"/b":    {Glob: sp("[a")},
		}},
		{Server: "fs", Tool: "read_[*", Class: Read, Action: Allow},
		{Server: "", Tool: "", Class: "rd", Action: "maybe"},
		{Server: "[!a]", Tool: "*", Class: Read, Action: Allow, When: map[string]Predicate{
			"path": {Equals: "x"},
			"/a":   {},
			"/c":   {Equals: "x", OneOf: []any{"y"}},
			"/d":   {Path: sp("/a/../b")},
			"/e":   {Equals: math.NaN()},
			"/f":   {Equals: math.Inf(-1)},
		}},
	}
	r, err := Compile(rules)
	if r != nil || err == nil {
		t.Fatalf("Compile = %v, %v", r, err)
	}
	want := []string{
		`rule[2].when."/b": glob: bad glob "[a": syntax error in pattern`,
		"rule[2].when.\"/path\": regex: error parsing regexp: missing closing ): `(`",
		`rule[3].tool: bad glob "read_[*": syntax error in pattern`,
		`rule[4].server: empty (write "*" to match any name)`,
		`rule[4].tool: empty (write "*" to match any name)`,
		`rule[4].class: unknown class "rd" (want read, write, destructive, network or exec)`,
		`rule[4].action: unknown action "maybe" (want allow, ask or deny)`,
		`rule[5].server: bad glob "[!a]": syntax error in pattern: "[!" is ambiguous: write "[^" to negate or "[\!" for a literal '!'`,
		`rule[5].when."/a": no condition: set exactly one of equals, one_of, prefix, glob, regex, path, max_length, absent`,
		`rule[5].when."/c": several conditions (equals, one_of): set exactly one`,
		`rule[5].when."/d": path: bad pattern "/a/../b": not clean (path.Clean gives "/b")`,
		`rule[5].when."/e": equals: NaN never equals a JSON number`,
		`rule[5].when."/f": equals: -Inf never equals a JSON number`,
		`rule[5].when."path": bad JSON pointer: must be "" or start with "/"`,
	}
	if got := err.Error(); got != strings.Join(want, "\n") {
		t.Errorf("Compile error:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
	}
	// Each problem is its own joined error.
	var joined interface{ Unwrap() []error }
	if !errors.As(err, &joined) || len(joined.Unwrap()) != len(want) {
		t.Errorf("want %d joined errors", len(want))
	}
	if !errors.Is(err, errBadPattern) {
		t.Error("glob errors should wrap errBadPattern")
	}
}

func TestExplain(t *testing.T) {
	r := designRules(t)
	m, ok, steps := r.Explain("fs", "write_file", doc(t, `{"path": "/etc/passwd"}`))
	if !ok || m.Rule != 3 {
		t.Fatalf("Explain = %+v, %v", m, ok)
	}
	want := []Step{
		{Rule: 1, Why: `when "/path" (path): no match`},
		{Rule: 2, Why: `tool glob "read_*"`},
		{Rule: 3},
	}
	if len(steps) != len(want) {
		t.Fatalf("steps = %+v", steps)
	}
	for i := range want {
		if steps[i] != want[i] {
			t.Errorf("step %d = %+v, want %+v", i, steps[i], want[i])
		}
	}
	_, ok, steps = r.Explain("fs", "write_file", doc(t, `{"path": 7}`))
	if !ok || steps[0].Why != `when "/path" (path): not a string` {
		t.Errorf("steps = %+v", steps)
	}
	_, ok, steps = r.Explain("fs", "write_file", doc(t, `{}`))
	if !ok || steps[0].Why != `when "/path" (path): missing` {
		t.Errorf("steps = %+v", steps)
	}
	r2, _ := Compile([]Rule{{Server: "db", Tool: "*", Class: Read, Action: Allow}})
	_, ok, steps = r2.Explain("fs", "x", nil)
	if ok || len(steps) != 1 || steps[0].Why != `server glob "db"` {
		t.Errorf("Explain no match = %v, %+v", ok, steps)
	}
	// Explain and Decide agree.
	for _, args := range []string{`{"path": "/home/me/work/scratch/x"}`, `{"path": "/x"}`, `{}`} {
		m1, ok1 := r.Decide("fs", "write_file", doc(t, args))
		m2, ok2, _ := r.Explain("fs", "write_file", doc(t, args))
		if !reflect.DeepEqual(m1, m2) || ok1 != ok2 {
			t.Errorf("%s: Decide %+v %v, Explain %+v %v", args, m1, ok1, m2, ok2)
		}
	}
}

func TestCompileCopiesInput(t *testing.T) {
	pat := "/tmp/**"
	rules := []Rule{{Server: "fs", Tool: "w", Class: Write, Action: Allow,
		When: map[string]Predicate{"/p": {Path: &pat}}}}
	r, err := Compile(rules)
	if err != nil {
		t.Fatal(err)
	}
	pat = "/**"
	rules[0].Tool = "*"
	rules[0].When["/p"] = Predicate{Absent: bp(false)}
	if _, ok := r.Decide("fs", "w", doc(t, `{"p": "/etc/x"}`)); ok {
		t.Error("compiled rules changed after Compile")
	}
	if _, ok := r.Exposable("fs", "other"); ok {
		t.Error("compiled rules changed after Compile")
	}
}

func TestConcurrentUse(t *testing.T) {
	r := designRules(t)
	args := doc(t, `{"path": "/home/me/work/scratch/a"}`)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 200 {
				if m, ok := r.Decide("fs", "write_file", args); !ok || m.Rule != 1 {
					t.Errorf("Decide = %+v, %v", m, ok)
					return
				}
				r.Exposable("fs", "read_file")
				r.Explain("db", "x", args)
				r.Lint([]string{"fs"})
			}
		})
	}
	wg.Wait()
}

func TestDecideDoesNotAllocate(t *testing.T) {
	r := designRules(t)
	args := doc(t, `{"path": "/etc/passwd"}`)
	n := testing.AllocsPerRun(100, func() { r.Decide("fs", "read_file", args) })
	if n != 0 {
		t.Errorf("Decide allocates %v times", n)
	}
}

func TestDecidePathDoesNotAllocate(t *testing.T) {
	r := designRules(t)
	args := doc(t, `{"path": "/home/me/work/scratch/a/b/c.txt"}`)
	n := testing.AllocsPerRun(100, func() {
		if m, _ := r.Decide("fs", "write_file", args); m.Rule != 1 {
			t.Fatal("no match")
		}
	})
	if n != 0 {
		t.Errorf("Decide allocates %v times", n)
	}
}
