package gate

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/mcp-guard/mcp-guard/classify"
	"github.com/mcp-guard/mcp-guard/internal/canon"
	"github.com/mcp-guard/mcp-guard/pin"
)

// Member names equal under Unicode simple case folding mean one member to a
// Go server (encoding/json, mcp-go's BindArguments) and two to a JSON
// Pointer: such arguments are refused as invalid before any rule decides,
// at every depth, whether the names come in pairs or a lone name differs
// in case from the one a rule or the pinned schema reads (J3).
func TestDecide_CaseFoldedNamesRefused(t *testing.T) {
	g := testGate(t)
	declared, err := pin.CompileSchema([]byte(`{"type":"object","properties":{"path":{"type":"string","pattern":"^/work/"}}}`), pin.SchemaLimits{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		tool, args string
		schema     *pin.Schema
		want       Outcome
		msg        string
	}{
		// Allowed: exact names, and names that differ other than by case.
		{"write_file", `{"path":"/work/scratch/a"}`, anyObject(t), Allow, ""},
		{"write_file", `{"path":"/work/scratch/a","paths":"/etc/x"}`, anyObject(t), Allow, ""},
		{"read_file", `{"a":{"x":1,"y":2},"b":[{"x":1},{"X":1}]}`, anyObject(t), Allow, ""},
		{"read_file", `{"path":"/work/a"}`, declared, Allow, ""},
		// A pair in one object, at the top or nested, ASCII or not.
		{"write_file", `{"path":"/work/scratch/a","PATH":"/etc/x"}`, anyObject(t), Invalid, `"PATH" and "path" differ only in case`},
		{"write_file", `{"path":"/work/scratch/a","pAtH":"/etc/x"}`, anyObject(t), Invalid, "differ only in case"},
		{"read_file", `{"o":{"mask":1,"maſk":2}}`, anyObject(t), Invalid, "at /o"},
		{"read_file", `{"l":[{},{"kind":1,"` + "\u212a" + `ind":2}]}`, anyObject(t), Invalid, "at /l/1"},
		// A lone name that differs in case from the one a rule reads: the
		// predicate would see nothing where a Go server reads it.
		{"write_file", `{"PATH":"/etc/x"}`, anyObject(t), Invalid, `"/PATH" differs only in case from "/path", which rule 1 reads`},
		{"write_file", `{"Path":"/work/scratch/a"}`, anyObject(t), Invalid, "differs only in case"},
		// ...or from the one the pinned schema declares: its pattern would
		// not apply to what the server reads.
		{"read_file", `{"PATH":"/etc/x"}`, declared, Invalid, `"PATH" differs only in case from the declared property "path"`},
		{"read_file", `{"pAth":"/work/a"}`, declared, Invalid, "declared property"},
	} {
		d := g.Decide("fs", tc.tool, tc.schema, []byte(tc.args))
		if d.Outcome != tc.want || !strings.Contains(d.Message, tc.msg) {
			t.Errorf("%s %s: got %v %q; want %v containing %q", tc.tool, tc.args, d.Outcome, d.Message, tc.want, tc.msg)
		}
	}

	rules, err := classify.Compile([]classify.Rule{{Server: "s", Prompt: "p", Class: classify.Read, Action: classify.Allow,
		When: map[string]classify.Predicate{"/lang": {Equals: "en"}}}})
	if err != nil {
		t.Fatal(err)
	}
	pg := New(rules)
	if d := pg.DecidePrompt("s", "p", []byte(`{"lang":"en"}`)); d.Outcome != Allow {
		t.Errorf("prompt with exact names: %v %q", d.Outcome, d.Message)
	}
	for _, args := range []string{`{"lang":"en","LANG":"de"}`, `{"Lang":"de"}`} {
		if d := pg.DecidePrompt("s", "p", []byte(args)); d.Outcome != Invalid || !strings.Contains(d.Message, "differ") {
			t.Errorf("prompt %s: %v %q; want invalid", args, d.Outcome, d.Message)
		}
	}
}

// FuzzCaseFoldAgainstEncodingJSON holds the gate to encoding/json's own
// matching: for two member names a and b, whenever a struct field named a
// is filled by encoding/json from anything but the member named exactly a,
// the gate refuses the call, which a rule reads through "/a"; and whenever
// a and b do not fold together, it is not refused as invalid.
func FuzzCaseFoldAgainstEncodingJSON(f *testing.F) {
	for _, s := range [][2]string{
		{"path", "PATH"}, {"path", "pAtH"}, {"mask", "maſk"}, {"kind", "\u212aind"}, {"k", "K"},
		{"path", "paths"}, {"ß", "ẞ"}, {"σ", "ς"}, {"ǅ", "ǆ"}, {"a", "b"}, {"İ", "i"}, {"ﬀ", "ff"},
	} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		if a == b || a == "" || a == "-" || !utf8.ValidString(a) || !utf8.ValidString(b) || !validTag(a) {
			t.Skip()
		}
		rules, err := classify.Compile([]classify.Rule{{Server: "s", Tool: "t", Class: classify.Read, Action: classify.Allow,
			When: map[string]classify.Predicate{"/" + canon.EscapeToken(a): {Absent: new(bool)}}}})
		if err != nil {
			t.Skip()
		}
		g := New(rules)
		schema, err := pin.CompileSchema([]byte(`{"type":"object"}`), pin.SchemaLimits{})
		if err != nil {
			t.Fatal(err)
		}
		field := reflect.StructOf([]reflect.StructField{{Name: "F", Type: reflect.TypeFor[string](), Tag: reflect.StructTag(`json:"` + a + `"`)}})
		for _, doc := range []string{
			"{" + member(a, "exact") + "," + member(b, "other") + "}",
			"{" + member(b, "other") + "," + member(a, "exact") + "}",
			"{" + member(b, "other") + "}",
		} {
			v := reflect.New(field)
			if err := json.Unmarshal([]byte(doc), v.Interface()); err != nil {
				t.Fatalf("encoding/json refused %s: %v", doc, err)
			}
			got := v.Elem().Field(0).String()
			want := ""
			if strings.Contains(doc, member(a, "exact")) {
				want = "exact"
			}
			d := g.Decide("s", "t", schema, []byte(doc))
			if got != want && d.Outcome != Invalid {
				t.Fatalf("%s: encoding/json reads %q for the field named %q, the gate %v", doc, got, a, d.Outcome)
			}
			if !bytes.EqualFold([]byte(a), []byte(b)) && d.Outcome == Invalid {
				t.Fatalf("%s: names that do not fold together refused: %q", doc, d.Message)
			}
		}
	})
}

func member(name, value string) string {
	n, _ := json.Marshal(name)
	v, _ := json.Marshal(value)
	return string(n) + ":" + string(v)
}

// validTag is encoding/json's rule for a name in a struct tag.
func validTag(s string) bool {
	for _, c := range s {
		switch {
		case strings.ContainsRune("!#$%&()*+-./:;<=>?@[]^_{|}~ ", c):
		case !unicode.IsLetter(c) && !unicode.IsDigit(c):
			return false
		}
	}
	return true
}
