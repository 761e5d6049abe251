package classify

import (
	"reflect"
	"strings"
	"testing"
)

func TestPointerParse(t *testing.T) {
	good := []struct {
		ptr  string
		toks []string
	}{
		{"", nil},
		{"/", []string{""}},
		{"/a", []string{"a"}},
		{"/a/0/b", []string{"a", "0", "b"}},
		{"/a~1b", []string{"a/b"}},
		{"/m~0n", []string{"m~n"}},
		{"/~01", []string{"~1"}}, // ~0 first, then a literal '1': not '/'
		{"/~10", []string{"/0"}},
		{"//", []string{"", ""}},
		{"/ ", []string{" "}},
		{"/é", []string{"é"}},
	}
	for _, tt := range good {
		p, err := parsePointer(tt.ptr)
		if err != nil {
			t.Errorf("parsePointer(%q): %v", tt.ptr, err)
			continue
		}
		if !reflect.DeepEqual(p.toks, tt.toks) {
			t.Errorf("parsePointer(%q) = %q, want %q", tt.ptr, p.toks, tt.toks)
		}
	}
	bad := []struct{ ptr, msg string }{
		{"a", `must be "" or start with "/"`},
		{"path", `must be "" or start with "/"`},
		{"#/a", `must be "" or start with "/"`},
		{"/a~", `"~" must be followed by 0 or 1`},
		{"/a~2", `"~" must be followed by 0 or 1`},
		{"/~/", `"~" must be followed by 0 or 1`},
	}
	for _, tt := range bad {
		_, err := parsePointer(tt.ptr)
		if err == nil || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("parsePointer(%q) = %v, want %q", tt.ptr, err, tt.msg)
		}
	}
}

func TestPointerResolve(t *testing.T) {
	// The RFC 6901 section 5 example, plus arrays and odd keys.
	d := doc(t, `{
		"foo": ["bar", "baz"], "": 0, "a/b": 1, "c%d": 2, "e^f": 3, "g|h": 4,
		"i\\j": 5, "k\"l": 6, " ": 7, "m~n": 8,
		"arr": [{"x": "deep"}, null, [10, 11]],
		"n": null, "s": "str", "0": "zero-key"
	}`)
	tests := []struct {
		ptr   string
		want  any
		found bool
	}{
		{"/foo/0", "bar", true},
		{"/foo/1", "baz", true},
		{"/", "0", true}, // json.Number("0"), compared as string below
		{"/a~1b", "1", true},
		{"/c%d", "2", true},
		{"/e^f", "3", true},
		{"/g|h", "4", true},
		{`/i\j`, "5", true},
		{`/k"l`, "6", true},
		{"/ ", "7", true},
		{"/m~0n", "8", true},
		{"/arr/0/x", "deep", true},
		{"/arr/1", nil, true},
		{"/arr/2/1", "11", true},
		{"/n", nil, true},
		{"/0", "zero-key", true}, // on an object, "0" is a key
		// not found
		{"/foo/2", nil, false},
		{"/foo/-", nil, false},
		{"/foo/01", nil, false},
		{"/foo/00", nil, false},
		{"/foo/+1", nil, false},
		{"/foo/-1", nil, false},
		{"/foo/ 1", nil, false},
		{"/foo/1e0", nil, false},
		{"/foo/99999999999999999999999", nil, false},
		{"/foo/bar", nil, false},
		{"/a/b", nil, false}, // "/a/b" is two tokens, not the key "a/b"
		{"/m~n", nil, false},
		{"/missing", nil, false},
		{"/s/0", nil, false}, // a string has no children
		{"/n/x", nil, false},
		{"/arr/1/x", nil, false},
		{"/foo/0/x", nil, false},
	}
	for _, tt := range tests {
		p, err := parsePointer(tt.ptr)
		if err != nil {
			if tt.ptr == "/m~n" {
				continue // refused at parse: also fine
			}
			t.Fatalf("parsePointer(%q): %v", tt.ptr, err)
		}
		got, found := p.resolve(d)
		if found != tt.found {
			t.Errorf("resolve(%q) found = %v, want %v", tt.ptr, found, tt.found)
			continue
		}
		if found && tt.want != nil {
			if s, _ := anyString(got); s != tt.want {
				t.Errorf("resolve(%q) = %v, want %v", tt.ptr, got, tt.want)
			}
		}
		if found && tt.want == nil && got != nil {
			t.Errorf("resolve(%q) = %v, want null", tt.ptr, got)
		}
	}
	if v, ok := (pointer{}).resolve(d); !ok || !reflect.DeepEqual(v, d) {
		t.Errorf(`resolve("") is not the whole document`)
	}
	if v, ok := (pointer{}).resolve(nil); !ok || v != nil {
		t.Errorf(`resolve("") on null = %v, %v`, v, ok)
	}
}

func anyString(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case interface{ String() string }:
		return x.String(), true
	}
	return "", false
}
