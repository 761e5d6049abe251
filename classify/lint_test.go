package classify

import (
	"slices"
	"strings"
	"testing"
)

func TestLint(t *testing.T) {
	tests := []struct {
		name    string
		rules   []Rule
		servers []string
		want    []string // substrings, one per warning, in order
	}{
		{
			name:    "design config is clean",
			rules:   []Rule{{Server: "fs", Tool: "write_file", When: map[string]Predicate{"/path": {Path: sp("/a/**")}}}, {Server: "fs", Tool: "read_*"}, {Server: "*", Tool: "*"}},
			servers: []string{"fs", "remote"},
		},
		{
			name:    "unknown server",
			rules:   []Rule{{Server: "fs", Tool: "*"}, {Server: "gh*", Tool: "*"}, {Server: "*", Tool: "*"}},
			servers: []string{"fs", "db"},
			want:    []string{`rule[2]: server "gh*" matches no configured server; the rule can never match`},
		},
		{
			name:    "catch-all after a rule covering every configured server",
			rules:   []Rule{{Server: "fs", Tool: "*"}, {Server: "*", Tool: "*"}},
			servers: []string{"fs"},
			want:    []string{"rule[2]: rule[1] comes first"},
		},
		{
			name:    "no servers at all",
			rules:   []Rule{{Server: "*", Tool: "*"}},
			servers: nil,
			want:    []string{`rule[1]: server "*" matches no configured server`},
		},
		{
			name:    "shadowed by catch-all",
			rules:   []Rule{{Server: "*", Tool: "*"}, {Server: "fs", Tool: "read_*"}, {Server: "fs", Tool: "x", When: map[string]Predicate{"/a": {Absent: bp(true)}}}},
			servers: []string{"fs"},
			want: []string{
				"rule[2]: rule[1] comes first, has no when, and matches every server and tool this rule does; the rule can never match",
				"rule[3]: rule[1] comes first",
			},
		},
		{
			name:    "shadowed by identical globs",
			rules:   []Rule{{Server: "fs", Tool: "read_*"}, {Server: "fs", Tool: "read_*", When: map[string]Predicate{"/a": {Absent: bp(true)}}}},
			servers: []string{"fs", "db"},
			want:    []string{"rule[2]: rule[1] comes first"},
		},
		{
			name:    "shadowed: literal tool matched by earlier glob",
			rules:   []Rule{{Server: "fs", Tool: "read_*"}, {Server: "fs", Tool: "read_file"}},
			servers: []string{"fs"},
			want:    []string{"rule[2]: rule[1] comes first"},
		},
		{
			name:    "shadowed: earlier server glob covers every configured server this one matches",
			rules:   []Rule{{Server: "f*", Tool: "*"}, {Server: "fs*", Tool: "x"}},
			servers: []string{"fs", "fs2", "db"},
			want:    []string{"rule[2]: rule[1] comes first"},
		},
		{
			name:    "not shadowed: earlier rule has when",
			rules:   []Rule{{Server: "*", Tool: "*", When: map[string]Predicate{"/a": {Absent: bp(true)}}}, {Server: "fs", Tool: "x"}},
			servers: []string{"fs"},
		},
		{
			name:    "not shadowed: earlier rule narrower",
			rules:   []Rule{{Server: "fs", Tool: "read_file"}, {Server: "fs", Tool: "read_*"}, {Server: "fs", Tool: "write_*"}, {Server: "db", Tool: "*"}},
			servers: []string{"fs", "db"},
		},
		{
			name:    "not shadowed: earlier server glob misses one configured server",
			rules:   []Rule{{Server: "fs", Tool: "*"}, {Server: "f*", Tool: "x"}},
			servers: []string{"fs", "fx"},
		},
		{
			name:    "not shadowed: escaped star is a literal",
			rules:   []Rule{{Server: "*", Tool: `a\*`}, {Server: "*", Tool: "a*"}},
			servers: []string{"fs"},
		},
		{
			name: "absent with a condition below",
			rules: []Rule{{Server: "*", Tool: "*", When: map[string]Predicate{
				"/a":   {Absent: bp(true)},
				"/a/b": {Equals: "x"},
				"/a/c": {Absent: bp(true)}, // implied: fine
				"/ab":  {Equals: "y"},      // not below /a: fine
			}}},
			servers: []string{"fs"},
			want:    []string{`rule[1]: when."/a": absent = true, so when."/a/b" (equals) never holds; the rule can never match`},
		},
		{
			name: "scalar condition with a condition below",
			rules: []Rule{{Server: "*", Tool: "*", When: map[string]Predicate{
				"/a":   {Prefix: sp("x")},
				"/a/0": {Absent: bp(false)},
			}}},
			servers: []string{"fs"},
			want:    []string{`rule[1]: when."/a" (prefix) holds only for a string, number or boolean, below which when."/a/0" (absent) never resolves`},
		},
		{
			name: "absent on the whole document",
			rules: []Rule{{Server: "*", Tool: "*", When: map[string]Predicate{
				"": {Absent: bp(true)},
			}}},
			servers: []string{"fs"},
			want:    []string{`rule[1]: when."": absent = true never holds`},
		},
		{
			name: "compatible conditions",
			rules: []Rule{{Server: "*", Tool: "*", When: map[string]Predicate{
				"":     {Absent: bp(false)},
				"/a":   {Absent: bp(false)},
				"/a/b": {Equals: "x"},
				"/c":   {Absent: bp(true)},
				"/d":   {Prefix: sp("x")},
				"/d~1": {Equals: "x"},
			}}},
			servers: []string{"fs"},
		},
	}
	for _, tt := range tests {
		for i := range tt.rules {
			tt.rules[i].Class, tt.rules[i].Action = Read, Allow
		}
		r, err := Compile(tt.rules)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		got := r.Lint(tt.servers)
		if len(got) != len(tt.want) {
			t.Errorf("%s: Lint = %q, want %d warnings", tt.name, got, len(tt.want))
			continue
		}
		for i, w := range tt.want {
			if !strings.Contains(got[i], w) {
				t.Errorf("%s: warning %d = %q, want it to contain %q", tt.name, i, got[i], w)
			}
		}
	}
}

// TestLintShadowIsSound checks every shadow warning against Exposable on
// sample names: a shadowed rule must never be the first match.
func TestLintShadowIsSound(t *testing.T) {
	globs := []string{"*", "fs", "f*", "fs*", "read_*", "read_file", "[fr]*", "?s", `a\*`, "a*"}
	names := []string{"fs", "fs2", "fx", "db", "read_file", "read_x", "a*", "ab", "rs", "r"}
	servers := []string{"fs", "fs2", "db", "rs"}
	for _, s1 := range globs {
		for _, t1 := range globs {
			for _, s2 := range globs {
				for _, t2 := range globs {
					r, err := Compile([]Rule{
						{Server: s1, Tool: t1, Class: Read, Action: Allow},
						{Server: s2, Tool: t2, Class: Write, Action: Ask},
					})
					if err != nil {
						t.Fatal(err)
					}
					shadowed := slices.ContainsFunc(r.Lint(servers), func(w string) bool {
						return strings.HasPrefix(w, "rule[2]: rule[1] comes first")
					})
					if !shadowed {
						continue
					}
					for _, s := range servers {
						for _, n := range names {
							if m, ok := r.Exposable(s, n); ok && m.Rule == 2 {
								t.Errorf("rules (%q,%q) (%q,%q): rule 2 reported shadowed but matches (%s, %s)", s1, t1, s2, t2, s, n)
							}
						}
					}
				}
			}
		}
	}
}
