package classify

import (
	"strings"
	"testing"
)

func TestPredicates(t *testing.T) {
	args := `{
		"s": "hello world", "e": "", "u": "héllo", "n": 42, "f": 1.5, "b": true,
		"z": null, "o": {"k": "v"}, "a": ["x", "y"],
		"p": "/work/scratch/notes.txt", "t": "/work/scratch/../../etc/passwd",
		"r": "work/scratch/x", "nul": "/work/scratch/a\u0000b", "ml": "line1\nline2"
	}`
	d := doc(t, args)
	tests := []struct {
		name string
		ptr  string
		p    Predicate
		want bool
	}{
		// equals
		{"equals string", "/s", Predicate{Equals: "hello world"}, true},
		{"equals string differs", "/s", Predicate{Equals: "hello"}, false},
		{"equals number", "/n", Predicate{Equals: int64(42)}, true},
		{"equals number differs", "/n", Predicate{Equals: int64(43)}, false},
		{"equals float", "/f", Predicate{Equals: 1.5}, true},
		{"equals bool", "/b", Predicate{Equals: true}, true},
		{"equals bool differs", "/b", Predicate{Equals: false}, false},
		{"equals missing", "/nope", Predicate{Equals: "x"}, false},
		{"equals null", "/z", Predicate{Equals: ""}, false},
		{"equals object", "/o", Predicate{Equals: "v"}, false},
		{"equals array", "/a", Predicate{Equals: "x"}, false},
		{"equals nested", "/o/k", Predicate{Equals: "v"}, true},
		{"equals array element", "/a/1", Predicate{Equals: "y"}, true},
		{"equals array element differs", "/a/0", Predicate{Equals: "y"}, false},
		// one_of
		{"one_of hit", "/s", Predicate{OneOf: []any{"x", "hello world"}}, true},
		{"one_of miss", "/s", Predicate{OneOf: []any{"x", "y"}}, false},
		{"one_of number", "/n", Predicate{OneOf: []any{"42", int64(42)}}, true},
		{"one_of number as string only", "/n", Predicate{OneOf: []any{"42"}}, false},
		{"one_of mixed miss", "/b", Predicate{OneOf: []any{"true", int64(1)}}, false},
		{"one_of missing", "/nope", Predicate{OneOf: []any{"x"}}, false},
		// prefix
		{"prefix", "/s", Predicate{Prefix: sp("hello ")}, true},
		{"prefix whole", "/s", Predicate{Prefix: sp("hello world")}, true},
		{"prefix empty", "/e", Predicate{Prefix: sp("")}, true},
		{"prefix miss", "/s", Predicate{Prefix: sp("world")}, false},
		{"prefix longer", "/s", Predicate{Prefix: sp("hello world!")}, false},
		{"prefix number", "/n", Predicate{Prefix: sp("4")}, false},
		{"prefix null", "/z", Predicate{Prefix: sp("")}, false},
		{"prefix missing", "/nope", Predicate{Prefix: sp("")}, false},
		{"prefix array", "/a", Predicate{Prefix: sp("")}, false},
		// glob
		{"glob", "/s", Predicate{Glob: sp("hello *")}, true},
		{"glob whole string", "/s", Predicate{Glob: sp("hello")}, false},
		{"glob star crosses slash", "/p", Predicate{Glob: sp("/work/*")}, true},
		{"glob is not a path match", "/t", Predicate{Glob: sp("/work/scratch/*")}, true},
		{"glob number", "/n", Predicate{Glob: sp("*")}, false},
		{"glob missing", "/nope", Predicate{Glob: sp("*")}, false},
		{"glob bool", "/b", Predicate{Glob: sp("*")}, false},
		// regex
		{"regex whole", "/s", Predicate{Regex: sp("hello \\w+")}, true},
		{"regex anchored start", "/s", Predicate{Regex: sp("world")}, false},
		{"regex anchored end", "/s", Predicate{Regex: sp("hello")}, false},
		{"regex alternation anchored", "/s", Predicate{Regex: sp("hello|x")}, false},
		{"regex alternation whole", "/s", Predicate{Regex: sp("x|hello world")}, true},
		{"regex no dot-newline", "/ml", Predicate{Regex: sp("line1.line2")}, false},
		{"regex s flag", "/ml", Predicate{Regex: sp("(?s)line1.line2")}, true},
		{"regex multiline does not unanchor", "/ml", Predicate{Regex: sp("(?m)line1")}, false},
		{"regex number", "/n", Predicate{Regex: sp("42")}, false},
		{"regex missing", "/nope", Predicate{Regex: sp(".*")}, false},
		// path
		{"path", "/p", Predicate{Path: sp("/work/scratch/**")}, true},
		{"path traversal", "/t", Predicate{Path: sp("/work/scratch/**")}, false},
		{"path traversal target", "/t", Predicate{Path: sp("/etc/*")}, true},
		{"path relative", "/r", Predicate{Path: sp("/**")}, false},
		{"path empty", "/e", Predicate{Path: sp("/**")}, false},
		{"path nul", "/nul", Predicate{Path: sp("/**")}, false},
		{"path number", "/n", Predicate{Path: sp("/**")}, false},
		{"path missing", "/nope", Predicate{Path: sp("/**")}, false},
		{"path object", "/o", Predicate{Path: sp("/**")}, false},
		// max_length (runes)
		{"max_length under", "/s", Predicate{MaxLength: ip(20)}, true},
		{"max_length equal", "/s", Predicate{MaxLength: ip(11)}, true},
		{"max_length over", "/s", Predicate{MaxLength: ip(10)}, false},
		{"max_length runes not bytes", "/u", Predicate{MaxLength: ip(5)}, true},
		{"max_length runes over", "/u", Predicate{MaxLength: ip(4)}, false},
		{"max_length zero empty", "/e", Predicate{MaxLength: ip(0)}, true},
		{"max_length number", "/n", Predicate{MaxLength: ip(100)}, false},
		{"max_length array", "/a", Predicate{MaxLength: ip(100)}, false},
		{"max_length missing", "/nope", Predicate{MaxLength: ip(100)}, false},
		// absent
		{"absent true missing", "/nope", Predicate{Absent: bp(true)}, true},
		{"absent true present", "/s", Predicate{Absent: bp(true)}, false},
		{"absent true null is present", "/z", Predicate{Absent: bp(true)}, false},
		{"absent true below scalar", "/s/x", Predicate{Absent: bp(true)}, true},
		{"absent true array end", "/a/-", Predicate{Absent: bp(true)}, true},
		{"absent false present", "/s", Predicate{Absent: bp(false)}, true},
		{"absent false null", "/z", Predicate{Absent: bp(false)}, true},
		{"absent false missing", "/nope", Predicate{Absent: bp(false)}, false},
		{"absent false whole doc", "", Predicate{Absent: bp(false)}, true},
		{"absent true whole doc", "", Predicate{Absent: bp(true)}, false},
		// pointer escapes reach the right key
		{"escaped slash", "/o~1k", Predicate{Absent: bp(true)}, true},
	}
	for _, tt := range tests {
		r := one(t, tt.ptr, tt.p)
		if _, got := r.Decide("s", "t", d); got != tt.want {
			t.Errorf("%s: %q %+v = %v, want %v", tt.name, tt.ptr, tt.p, got, tt.want)
		}
	}
}

func TestPredicateEscapedKeys(t *testing.T) {
	d := doc(t, `{"a/b": "slash", "m~n": "tilde", "a": {"b": "nested"}}`)
	tests := []struct {
		ptr, want string
	}{
		{"/a~1b", "slash"},
		{"/m~0n", "tilde"},
		{"/a/b", "nested"},
	}
	for _, tt := range tests {
		r := one(t, tt.ptr, Predicate{Equals: tt.want})
		if _, ok := r.Decide("s", "t", d); !ok {
			t.Errorf("%q should equal %q", tt.ptr, tt.want)
		}
		r = one(t, tt.ptr, Predicate{Equals: "other"})
		if _, ok := r.Decide("s", "t", d); ok {
			t.Errorf("%q should not equal other", tt.ptr)
		}
	}
}

func TestWhenAllMustHold(t *testing.T) {
	r, err := Compile([]Rule{{
		Server: "fs", Tool: "write_file", Class: Write, Action: Allow,
		When: map[string]Predicate{
			"/path":    {Path: sp("/work/scratch/**")},
			"/content": {MaxLength: ip(5)},
			"/mode":    {Absent: bp(true)},
		},
	}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args string
		want bool
	}{
		{`{"path": "/work/scratch/a", "content": "hi"}`, true},
		{`{"path": "/work/scratch/a", "content": "too long"}`, false},
		{`{"path": "/etc/a", "content": "hi"}`, false},
		{`{"path": "/work/scratch/a", "content": "hi", "mode": "x"}`, false},
		{`{"path": "/work/scratch/a"}`, false},
		{`{}`, false},
		{`null`, false},
		{`[]`, false},
		{`"x"`, false},
	}
	for _, tt := range tests {
		if _, got := r.Decide("fs", "write_file", doc(t, tt.args)); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.args, got, tt.want)
		}
	}
	if _, ok := r.Decide("fs", "write_file", nil); ok {
		t.Error("nil args matched")
	}
}

func TestPredicateCompileErrors(t *testing.T) {
	tests := []struct {
		ptr string
		p   Predicate
		msg string
	}{
		{"/x", Predicate{}, "no condition: set exactly one of"},
		{"/x", Predicate{Equals: "a", Prefix: sp("b")}, "several conditions (equals, prefix): set exactly one"},
		{"/x", Predicate{Glob: sp("a"), Regex: sp("b"), Absent: bp(false)}, "several conditions (glob, regex, absent)"},
		{"/x", Predicate{Equals: []any{"a"}}, "equals: want a string, integer, float or boolean, got array"},
		{"/x", Predicate{Equals: map[string]any{}}, "equals: want a string, integer, float or boolean, got table"},
		{"/x", Predicate{Equals: int32(1)}, "got int32"},
		{"/x", Predicate{OneOf: []any{}}, "one_of: empty list never matches"},
		{"/x", Predicate{OneOf: []any{"a", []any{}, "b", nil}}, "one_of[1]: want a string"},
		{"/x", Predicate{OneOf: []any{"a", []any{}, "b", nil}}, "one_of[3]: want a string, integer, float or boolean, got null"},
		{"/x", Predicate{Glob: sp("[a")}, `glob: bad glob "[a": syntax error in pattern`},
		{"/x", Predicate{Regex: sp("(")}, "regex: error parsing regexp: missing closing ): `(`"},
		{"/x", Predicate{Regex: sp("a)(b")}, "regex: error parsing regexp: unexpected ): `a)(b`"},
		{"/x", Predicate{Path: sp("a/**")}, `path: bad pattern "a/**": not absolute`},
		{"/x", Predicate{Path: sp("/a/../b")}, `path: bad pattern "/a/../b": not clean (path.Clean gives "/b")`},
		{"/x", Predicate{MaxLength: ip(-1)}, "max_length: -1 is negative"},
		{"x", Predicate{Absent: bp(true)}, `bad JSON pointer: must be "" or start with "/"`},
		{"/x~2", Predicate{Absent: bp(true)}, `bad JSON pointer: "~" must be followed by 0 or 1`},
	}
	for _, tt := range tests {
		_, err := compilePred(tt.ptr, tt.p)
		if err == nil || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("compilePred(%q, %+v) = %v, want %q", tt.ptr, tt.p, err, tt.msg)
		}
	}
}
