package classify

import (
	"math/rand/v2"
	"strings"
	"testing"
)

func TestOverlaps(t *testing.T) {
	r := func(server, tool string, a Action) Rule {
		return Rule{Server: server, Tool: tool, Class: Write, Action: a}
	}
	tests := []struct {
		name    string
		rules   []Rule
		servers []string
		want    []string // substrings, one per warning, in order
	}{
		{
			name:    "an exception before the rule for the rest",
			rules:   []Rule{r("fs", "read_file", Allow), r("fs", "read_*", Ask), r("*", "*", Deny)},
			servers: []string{"fs", "web"},
		},
		{
			name:    "same actions",
			rules:   []Rule{r("fs", "write_*", Ask), r("fs", "*_file", Ask)},
			servers: []string{"fs"},
		},
		{
			name:    "disjoint names",
			rules:   []Rule{r("fs", "read_*", Allow), r("fs", "write_*", Deny)},
			servers: []string{"fs"},
		},
		{
			name:    "disjoint servers",
			rules:   []Rule{r("fs", "*", Allow), r("web", "*", Deny)},
			servers: []string{"fs", "web"},
		},
		{
			name:    "a broad rule first takes part of a later one",
			rules:   []Rule{r("fs", "write_*", Allow), r("fs", "*_file", Deny)},
			servers: []string{"fs"},
			want:    []string{`rule[2] (deny) overlaps rule[1] (allow): both match "fs/write_file", which rule[1] decides`},
		},
		{
			name:    "classes and a server glob",
			rules:   []Rule{r("f*", "[a-c]?", Allow), r("*s", "[^a]x", Ask)},
			servers: []string{"fs", "gs"},
			want:    []string{`both match "fs/cx"`},
		},
		{
			name:    "a conditional rule first",
			rules:   []Rule{{Server: "fs", Tool: "*", Class: Write, Action: Allow, When: map[string]Predicate{"/path": {Path: sp("/tmp/**")}}}, r("fs", "write_file", Deny)},
			servers: []string{"fs"},
			want:    []string{`both match "fs/write_file", which rule[1] decides where its when holds`},
		},
		{
			name:    "a shadowed rule is Lint's",
			rules:   []Rule{r("fs", "*", Allow), r("fs", "write_file", Deny)},
			servers: []string{"fs"},
		},
	}
	for _, tt := range tests {
		rs, err := Compile(tt.rules)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		got := rs.Overlaps(tt.servers)
		if len(got) != len(tt.want) {
			t.Errorf("%s: Overlaps = %q, want %d warnings", tt.name, got, len(tt.want))
			continue
		}
		for i, w := range tt.want {
			if !strings.Contains(got[i], w) {
				t.Errorf("%s: warning %d = %q, want it to contain %q", tt.name, i, got[i], w)
			}
		}
	}
}

// Every witness meet gives is matched by both globs, and meet finds one
// whenever a sampled string matches both.
func TestMeet_WitnessIsMatchedByBoth(t *testing.T) {
	parts := []string{"a", "b", "ab", "*", "?", "[a-c]", "[^a]", "x", "_"}
	rng := rand.New(rand.NewPCG(1, 2))
	pattern := func() string {
		var b strings.Builder
		for range 1 + rng.IntN(4) {
			b.WriteString(parts[rng.IntN(len(parts))])
		}
		return b.String()
	}
	samples := []string{"", "a", "b", "ab", "ba", "abc", "xb", "a_b", "bbb", "ax", "aab", "cab"}
	for range 3000 {
		p, q := pattern(), pattern()
		g, err := compileGlob(p)
		if err != nil {
			t.Fatal(err)
		}
		h, err := compileGlob(q)
		if err != nil {
			t.Fatal(err)
		}
		w, ok := g.meet(h)
		if ok && (!g.match(w) || !h.match(w)) {
			t.Fatalf("meet(%q, %q) = %q, which does not match both", p, q, w)
		}
		for _, s := range samples {
			if g.match(s) && h.match(s) && !ok {
				t.Fatalf("meet(%q, %q) found nothing, but %q matches both", p, q, s)
			}
		}
	}
}
