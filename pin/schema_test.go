package pin

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-guard/mcp-guard/internal/canon"
)

const draft07 = "http://json-schema.org/draft-07/schema#"

func mustCompile(t testing.TB, schema string) *Schema {
	t.Helper()
	s, err := CompileSchema([]byte(schema), SchemaLimits{})
	if err != nil {
		t.Fatalf("CompileSchema(%s): %v", schema, err)
	}
	return s
}

func decode(t testing.TB, doc string) any {
	t.Helper()
	v, err := canon.Decode([]byte(doc))
	if err != nil {
		t.Fatalf("canon.Decode(%s): %v", doc, err)
	}
	return v
}

// nested returns an object schema nested n levels below the root through
// "items", so its depth is n+1.
func nested(n int) string {
	return strings.Repeat(`{"items":`, n) + `{}` + strings.Repeat(`}`, n)
}

func TestCompileSchema_Accepts(t *testing.T) {
	for _, tc := range []struct{ name, schema string }{
		{"empty object", `{}`},
		{"2020-12 by default", `{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}`},
		{"server-everything echo (draft-07)", `{"type":"object","properties":{"message":{"type":"string","description":"Message to echo"}},"required":["message"],"additionalProperties":false,"$schema":"http://json-schema.org/draft-07/schema#"}`},
		{"draft-04", `{"$schema":"http://json-schema.org/draft-04/schema#","type":"object","properties":{"n":{"type":"integer","maximum":3,"exclusiveMaximum":true}}}`},
		{"draft-06", `{"$schema":"http://json-schema.org/draft-06/schema#","type":"object","propertyNames":{"maxLength":3}}`},
		{"2019-09", `{"$schema":"https://json-schema.org/draft/2019-09/schema","type":"object","$defs":{"x":{"type":"string"}},"properties":{"a":{"$ref":"#/$defs/x"}}}`},
		{"2020-12 explicit", `{"$schema":"https://json-schema.org/draft/2020-12/schema","type":"object","prefixItems":[{"type":"string"}]}`},
		{"internal $defs ref", `{"$defs":{"x":{"type":"string"}},"properties":{"a":{"$ref":"#/$defs/x"}}}`},
		{"internal definitions ref", `{"definitions":{"x":{"type":"string"}},"properties":{"a":{"$ref":"#/definitions/x"}}}`},
		{"$anchor", `{"$defs":{"x":{"$anchor":"name","type":"string"}},"properties":{"a":{"$ref":"#name"}}}`},
		{"embedded $id (urn)", `{"$defs":{"b":{"$id":"urn:example:b","type":"integer"}},"properties":{"y":{"$ref":"urn:example:b"}}}`},
		{"embedded $id (https)", `{"$defs":{"b":{"$id":"https://example.com/b.json","type":"integer"}},"properties":{"y":{"$ref":"https://example.com/b.json"}}}`},
		{"root $id then internal ref", `{"$id":"https://example.com/root.json","$defs":{"x":{"type":"string"}},"properties":{"a":{"$ref":"#/$defs/x"}}}`},
		{"recursive tree", `{"$defs":{"node":{"type":"object","properties":{"kids":{"type":"array","items":{"$ref":"#/$defs/node"}}}}},"$ref":"#/$defs/node"}`},
		{"pattern with \\u0000 (shim)", `{"properties":{"p":{"type":"string","pattern":"^[^\\u0000]+$"}}}`},
		{"pattern with surrogate pair and \\u{...}", `{"properties":{"p":{"pattern":"^(\\uD83D\\uDE00|\\u{1F601})$"}}}`},
		{"format annotation only", `{"properties":{"e":{"type":"string","format":"email"}}}`},
		{"depth 64 (the limit)", nested(63)},
		{"big integer bound", `{"properties":{"n":{"type":"integer","maximum":10000000000000000000}}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mustCompile(t, tc.schema)
		})
	}
}

func TestCompileSchema_Refuses(t *testing.T) {
	big := `{"description":"` + strings.Repeat("x", 300<<10) + `"}`
	for _, tc := range []struct {
		name, schema, want string
	}{
		{"300 KiB", big, "over the 262144-byte limit"},
		{"not JSON", `{"type":`, "not strict JSON"},
		{"trailing data", `{} {}`, "not strict JSON"},
		{"duplicate key", `{"type":"object","type":"string"}`, "not strict JSON"},
		{"escaped duplicate key", `{"type":"object","\u0074ype":"string"}`, "not strict JSON"},
		{"invalid UTF-8", "{\"description\":\"\xff\"}", "not strict JSON"},
		{"number that would change", `{"maximum":9007199254740993}`, "not strict JSON"},
		{"array", `[]`, "a JSON array, not an object"},
		{"true", `true`, "a JSON boolean, not an object"},
		{"depth 65", nested(64), "nests deeper than 64 levels"},
		{"deep array in enum", `{"enum":[` + strings.Repeat("[", 70) + strings.Repeat("]", 70) + `]}`, "nests deeper than 64 levels"},
		{"1,000 levels", nested(999), "nests deeper than 64 levels"},
		{"unknown $schema", `{"$schema":"https://evil.example/meta.json","type":"object"}`, `unknown "$schema"`},
		{"unknown json-schema.org draft", `{"$schema":"http://json-schema.org/draft-08/schema#"}`, `unknown "$schema"`},
		{"https ref", `{"properties":{"a":{"$ref":"https://example.com/x.json"}}}`, "refers outside itself: https://example.com/x.json"},
		{"http ref", `{"$ref":"http://127.0.0.1:1/x.json"}`, "refers outside itself: http://127.0.0.1:1/x.json"},
		{"file ref", `{"$ref":"file:///etc/passwd"}`, "refers outside itself: file:///etc/passwd"},
		{"relative ref", `{"$ref":"other.json"}`, "refers outside itself: other.json"},
		{"relative ref under root $id", `{"$id":"file:///etc/","$ref":"passwd"}`, "refers outside itself: file:///etc/passwd"},
		{"urn ref not in the document", `{"$ref":"urn:example:elsewhere"}`, "refers outside itself: urn:example:elsewhere"},
		{"ref to an embedded metaschema", `{"properties":{"s":{"$ref":"https://json-schema.org/draft/2020-12/schema"}}}`, "refers outside itself: https://json-schema.org/draft/2020-12/schema"},
		{"$dynamicRef outside", `{"$dynamicRef":"https://example.com/x.json#meta"}`, "refers outside itself"},
		{"missing internal ref", `{"$ref":"#/$defs/nope"}`, "not found"},
		{"draft-07 tuple items under 2020-12", `{"items":[{"type":"string"}]}`, "not a valid JSON Schema: at /items"},
		{"bad type", `{"type":5}`, "not a valid JSON Schema: at /type"},
		{"negative minLength", `{"properties":{"a":{"minLength":-1}}}`, "not a valid JSON Schema: at /properties/a/minLength"},
		{"lookahead pattern (no backtracking engine)", `{"properties":{"a":{"pattern":"^(?!admin).*$"}}}`, "is not valid regex"},
		{"backreference pattern", `{"patternProperties":{"^(\\w+)\\1$":{}}}`, "is not valid regex"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := CompileSchema([]byte(tc.schema), SchemaLimits{})
			if err == nil {
				t.Fatalf("accepted: %v", s)
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.want) {
				t.Fatalf("error %q does not say %q", msg, tc.want)
			}
			if strings.Contains(msg, "mcp-guard.invalid") || strings.Contains(msg, "\n") || len(msg) > 600 {
				t.Fatalf("error is not one short line without the base URL: %q", msg)
			}
		})
	}
}

func TestCompileSchema_Limits(t *testing.T) {
	if _, err := CompileSchema([]byte(`{"description":"0123456789"}`), SchemaLimits{MaxBytes: 10}); err == nil || !strings.Contains(err.Error(), "10-byte limit") {
		t.Fatalf("MaxBytes 10: %v", err)
	}
	if _, err := CompileSchema([]byte(nested(3)), SchemaLimits{MaxDepth: 3}); err == nil || !strings.Contains(err.Error(), "deeper than 3 levels (at /items/items/items)") {
		t.Fatalf("MaxDepth 3: %v", err)
	}
	if _, err := CompileSchema([]byte(nested(2)), SchemaLimits{MaxDepth: 3}); err != nil {
		t.Fatalf("MaxDepth 3, depth 3: %v", err)
	}
	// Above canon.MaxDepth the strict reader's limit applies, reported as ours.
	if _, err := CompileSchema([]byte(nested(300)), SchemaLimits{MaxDepth: 1000}); err == nil || !strings.Contains(err.Error(), "deeper than 256 levels") {
		t.Fatalf("MaxDepth 1000: %v", err)
	}
}

// TestCompileSchema_DeepRefusedFast: compile cost grows faster than
// linearly with depth (1,000 levels take seconds), so depth is refused
// before compiling. The work is measured in bytes allocated, not time,
// which a loaded machine stretches: refusing allocates about 120 KB
// today; compiling 250 levels (allowed a MaxDepth of 1000) allocates
// 38 MB, 128 levels 6 MB.
func TestCompileSchema_DeepRefusedFast(t *testing.T) {
	for _, n := range []int{1000, 100000} {
		raw := []byte(nested(n - 1))
		var err error
		used := allocated(func() { _, err = CompileSchema(raw, SchemaLimits{MaxBytes: 10 << 20}) })
		if err == nil || !strings.Contains(err.Error(), "nests deeper than 64 levels") {
			t.Fatalf("%d levels: %v", n, err)
		}
		t.Logf("%d-level schema (%d bytes) refused, %d bytes allocated", n, len(raw), used)
		if used > 1<<20 {
			t.Fatalf("%d levels: refusing allocated %d bytes, over 1 MiB: was it compiled?", n, used)
		}
	}
}

// TestCompileSchema_CostBounded: shapes that make the compiler slow are
// refused before compiling, or compile in bounded time. (Before the caps:
// 20,000 empty subschemas in 58 KiB took 2.6 s, 64 KiB of (a|b|c){1,999}
// patterns 2.9 s, both growing faster than linearly.) The work is measured
// in bytes allocated, not time, which a loaded machine stretches (speed is
// BenchmarkCompileSchema's). Each case's bound is several times what it
// allocates today and below what it allocates with its cap removed:
// 20,000 subschemas 2.6 MB (uncapped: 103 MB); one huge pattern 19 KB
// (7 MB); many big patterns 76 MB (1.8 GB); many big patternProperties
// 73 MB (556 MB); the accepted 5,000 subschemas 26 MB and 4,000 refs 29 MB.
func TestCompileSchema_CostBounded(t *testing.T) {
	many := func(n int, item string) string {
		return strings.TrimSuffix(strings.Repeat(item+",", n), ",")
	}
	members := func(n int, f func(i int) string) string {
		var p []string
		for i := 0; i < n; i++ {
			p = append(p, f(i))
		}
		return strings.Join(p, ",")
	}
	for _, tc := range []struct {
		name, schema, want string // want "" = accepted
		maxMiB             uint64 // bytes allocated compiling it, at most
	}{
		{"5,000 subschemas", `{"anyOf":[` + many(4999, `{}`) + `]}`, "", 128},
		{"5,001 subschemas", `{"anyOf":[` + many(5000, `{}`) + `]}`, "more than 5000 objects and booleans", 16},
		{"20,000 subschemas", `{"anyOf":[` + many(20000, `{}`) + `]}`, "more than 5000 objects and booleans", 16},
		{"20,000 boolean subschemas", `{"anyOf":[` + many(20000, `true`) + `]}`, "more than 5000 objects and booleans", 16},
		{"4,000 refs", `{"$defs":{"x":{"type":"object"}},"anyOf":[` + many(4000, `{"$ref":"#/$defs/x"}`) + `]}`, "", 128},
		{"pattern .{0,1000}", `{"properties":{"a":{"pattern":"^.{0,1000}$"}}}`, "", 16},
		{"one huge pattern", `{"properties":{"a":{"pattern":"^(abcdefghijk){1,1000}$"}}}`, "over the 10000 limit", 1},
		{"nested repeats (RE2 refuses)", `{"properties":{"a":{"pattern":"^((a|b){1,100}){1,100}$"}}}`, "invalid repeat count", 1},
		{"many big patterns", `{"properties":{` + members(900, func(i int) string { return fmt.Sprintf(`"p%d":{"pattern":"^(a|b|c){1,%d}$"}`, i, 900+i%100) }) + `}}`,
			"patterns expand to more than 200000 instructions in total", 256},
		{"many big patternProperties", `{"patternProperties":{` + members(300, func(i int) string { return fmt.Sprintf(`"^(x|y){1,%d}$":{}`, 700+i) }) + `}}`,
			"patterns expand to more than 200000 instructions in total", 256},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s *Schema
			var err error
			used := allocated(func() { s, err = CompileSchema([]byte(tc.schema), SchemaLimits{}) })
			t.Logf("%d bytes: %d bytes allocated (%v)", len(tc.schema), used, err)
			if used > tc.maxMiB<<20 {
				t.Errorf("compiling allocated %d bytes, over %d MiB", used, tc.maxMiB)
			}
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if err := s.Validate(map[string]any{"a": "x"}); err != nil && !strings.Contains(err.Error(), "arguments") {
					t.Fatal(err)
				}
			} else if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
	// A "format": "regex" argument (asserted under draft-07) is compiled
	// under a lower cap at validation time.
	s := mustCompile(t, `{"$schema":"`+draft07+`","properties":{"re":{"format":"regex"}}}`)
	if err := s.Validate(decode(t, `{"re":"^[a-z]+$"}`)); err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(decode(t, `{"re":"(a|b){1,999}"}`)); err == nil || !strings.Contains(err.Error(), "over the 1000 limit") {
		t.Fatalf("huge regex argument: %v", err)
	}
}

// compileWithin runs CompileSchema in a goroutine and fails the test if it
// does not return within 2 minutes. The deadline detects a hang (opening a
// FIFO blocks forever), not slowness: compiling takes milliseconds.
func compileWithin(t *testing.T, schema string) error {
	t.Helper()
	done := make(chan error, 1)
	go func() {
		_, err := CompileSchema([]byte(schema), SchemaLimits{})
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(2 * time.Minute):
		t.Fatalf("CompileSchema blocked: it tried to open a file (%s)", schema)
		return nil
	}
}

// assertNoReader proves nobody has the FIFO open for reading: opening it
// for writing without blocking fails with ENXIO exactly then.
func assertNoReader(t *testing.T, fifo string) {
	t.Helper()
	f, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0)
	if err == nil {
		f.Close()
		t.Fatalf("%s has a reader: the compiler opened it", fifo)
	}
	if !errors.Is(err, syscall.ENXIO) {
		t.Fatalf("open %s for writing: %v (want ENXIO: no reader)", fifo, err)
	}
}

func TestCompileSchema_NeverOpensFiles(t *testing.T) {
	dir := t.TempDir()
	sentinel := filepath.Join(dir, "sentinel.json")
	if err := syscall.Mkfifo(sentinel, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	locked := filepath.Join(dir, "locked")
	if err := os.Mkdir(locked, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(locked, "inner.json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(locked, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(locked, 0o700) })
	// A relative reference, with a FIFO of that name in the working
	// directory: resolved against a file base it would be opened.
	t.Chdir(dir)
	if err := syscall.Mkfifo(filepath.Join(dir, "other.json"), 0o600); err != nil {
		t.Fatal(err)
	}

	for _, ref := range []string{
		"file://" + sentinel,
		"file://" + sentinel + "#/definitions/x",
		"file://" + filepath.Join(locked, "inner.json"),
		"other.json",
		"./other.json#/x",
		"sentinel.json",
	} {
		for _, schema := range []string{
			fmt.Sprintf(`{"$ref":%q}`, ref),
			fmt.Sprintf(`{"$schema":%q,"properties":{"a":{"$ref":%q}}}`, draft07, ref),
			fmt.Sprintf(`{"$schema":%q}`, ref),
		} {
			err := compileWithin(t, schema)
			if err == nil {
				t.Fatalf("%s accepted", schema)
			}
			if !strings.Contains(err.Error(), "refers outside itself") && !strings.Contains(err.Error(), `unknown "$schema"`) {
				t.Fatalf("%s: %v", schema, err)
			}
			if strings.Contains(err.Error(), "permission denied") || strings.Contains(err.Error(), "no such file") {
				t.Fatalf("%s: the compiler touched the file system: %v", schema, err)
			}
		}
	}
	assertNoReader(t, sentinel)
	assertNoReader(t, filepath.Join(dir, "other.json"))
}

func TestValidate(t *testing.T) {
	writeFile := `{
	  "type":"object",
	  "properties":{
	    "path":{"type":"string","minLength":1,"pattern":"^[^\\u0000]+$"},
	    "content":{"type":"string"},
	    "mode":{"enum":["overwrite","append"]},
	    "createDirs":{"type":"boolean"}
	  },
	  "required":["path","content"],
	  "additionalProperties":false
	}`
	numbers := `{"properties":{"n":{"type":"integer"},"m":{"type":"integer","maximum":10000000000000000000}}}`
	d07 := `{"$schema":"` + draft07 + `","definitions":{"s":{"type":"string"}},"properties":{"x":{"$ref":"#/definitions/s","maxLength":2},"e":{"format":"email"}},"dependencies":{"a":["b"]}}`
	d2020 := `{"$defs":{"s":{"type":"string"}},"properties":{"x":{"$ref":"#/$defs/s","maxLength":2}},"dependencies":{"a":["b"]}}`
	anchors := `{"$defs":{"a":{"$anchor":"name","type":"string"},"b":{"$id":"urn:example:b","type":"integer"}},"properties":{"x":{"$ref":"#name"},"y":{"$ref":"urn:example:b"}}}`

	for _, tc := range []struct {
		name, schema string
		doc          any
		want         []Failure // nil: valid
	}{
		{"valid", writeFile, `{"path":"a.txt","content":"x","mode":"append"}`, nil},
		{"missing required", writeFile, `{"path":"a.txt"}`, []Failure{{"", "missing property 'content'"}}},
		{"wrong type", writeFile, `{"path":"a","content":"x","createDirs":"yes"}`, []Failure{{"/createDirs", "got string, want boolean"}}},
		{"enum", writeFile, `{"path":"a","content":"x","mode":"truncate"}`, []Failure{{"/mode", "value must be one of 'overwrite', 'append'"}}},
		{"pattern with \\u0000", writeFile, `{"path":"a\u0000b","content":"x"}`, []Failure{{"/path", `'a\x00b' does not match pattern '^[^\\u0000]+$'`}}},
		{"additionalProperties false", writeFile, `{"path":"a","content":"x","extra":1}`, []Failure{{"", "additional properties 'extra' not allowed"}}},
		{"several, leaves sorted", writeFile, `{"path":"","mode":"x"}`, []Failure{
			{"", "missing property 'content'"},
			{"/mode", "value must be one of 'overwrite', 'append'"},
			{"/path", "'' does not match pattern '^[^\\\\u0000]+$'"},
			{"/path", "minLength: got 0, want 1"},
		}},
		{"not an object", writeFile, `[]`, []Failure{{"", "got array, want object"}}},
		{"big integer is an integer", numbers, map[string]any{"n": json.Number("12345678901234567890")}, nil},
		{"big integer above maximum", numbers, map[string]any{"m": json.Number("12345678901234567890")}, []Failure{{"/m", "maximum"}}},
		{"maximum compared exactly", numbers, map[string]any{"m": json.Number("10000000000000000001")}, []Failure{{"/m", "maximum"}}},
		{"at maximum", numbers, map[string]any{"m": json.Number("10000000000000000000")}, nil},
		{"not an integer", numbers, map[string]any{"n": json.Number("1.5")}, []Failure{{"/n", "got number, want integer"}}},
		{"draft-07 ignores $ref siblings", d07, `{"x":"abcdef"}`, nil},
		{"2020-12 applies $ref siblings", d2020, `{"x":"abcdef"}`, []Failure{{"/x", "maxLength: got 6, want 2"}}},
		{"draft-07 definitions ref", d07, `{"x":5}`, []Failure{{"/x", "got number, want string"}}},
		{"draft-07 dependencies", d07, `{"a":1}`, []Failure{{"", "properties 'b' required, if 'a' exists"}}},
		{"draft-07 tuple items", `{"$schema":"` + draft07 + `","items":[{"type":"string"}],"additionalItems":false}`, `["a","b"]`, []Failure{{"", "additionalItem(s) not allowed"}}},
		{"draft-07 format not asserted", d07, `{"e":"not an email"}`, nil},
		{"$anchor ref", anchors, `{"x":1}`, []Failure{{"/x", "got number, want string"}}},
		{"embedded $id ref", anchors, `{"y":"s"}`, []Failure{{"/y", "got string, want integer"}}},
		{"key with slash and tilde", `{"additionalProperties":{"type":"string"}}`, `{"a/b~c":1}`, []Failure{{"/a~1b~0c", "got number, want string"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := mustCompile(t, tc.schema)
			doc := tc.doc
			if str, ok := doc.(string); ok {
				doc = decode(t, str)
			}
			err := s.Validate(doc)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("want valid, got %v", err)
				}
				return
			}
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("want *ValidationError, got %T %v", err, err)
			}
			if len(ve.Failures) != len(tc.want) {
				t.Fatalf("failures %q, want %q", ve.Failures, tc.want)
			}
			for i, w := range tc.want {
				g := ve.Failures[i]
				if g.Pointer != w.Pointer || !strings.Contains(g.Reason, w.Reason) {
					t.Errorf("failure %d = %q, want %q", i, g, w)
				}
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "arguments do not match the tool's inputSchema: at ") || strings.Contains(msg, "\n") || strings.Contains(msg, "mcp-guard.invalid") || strings.Contains(msg, "jsonschema") {
				t.Fatalf("Error() = %q", msg)
			}
		})
	}
}

func TestValidate_ErrorLine(t *testing.T) {
	s := mustCompile(t, `{"properties":{"path":{"type":"string","minLength":1}},"required":["content"]}`)
	err := s.Validate(decode(t, `{"path":""}`))
	want := "arguments do not match the tool's inputSchema: at /: missing property 'content'; at /path: minLength: got 0, want 1"
	if err == nil || err.Error() != want {
		t.Fatalf("Error() = %q\nwant      %q", err, want)
	}
}

func TestValidate_MessagesBounded(t *testing.T) {
	s := mustCompile(t, `{"properties":{"p":{"type":"string","pattern":"^[a-z]*$"}},"additionalProperties":{"type":"integer"}}`)
	secret := strings.Repeat("S3CRET-", 20000) + "\x1b]8;;http://evil\x07\u202e"
	doc := map[string]any{"p": secret}
	for i := 0; i < 30; i++ {
		doc[fmt.Sprintf("k%02d", i)] = "not an integer \u202e\x1b[2J"
	}
	err := s.Validate(doc)
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("got %v", err)
	}
	if len(ve.Failures) != 10 || ve.Omitted != 21 {
		t.Fatalf("%d failures, %d omitted; want 10 and 21", len(ve.Failures), ve.Omitted)
	}
	for _, f := range ve.Failures {
		if len(f.Reason) > 240 || len(f.Pointer) > 240 {
			t.Fatalf("failure not cut: %d bytes", len(f.Reason))
		}
	}
	msg := err.Error()
	if len(msg) > 3000 || strings.ContainsAny(msg, "\x1b\x07\u202e\n") || !strings.HasSuffix(msg, "; and 21 more") {
		t.Fatalf("Error() unsafe or unbounded (%d bytes): %.300q", len(msg), msg)
	}
	// The long value is cut, not echoed whole.
	s2 := mustCompile(t, `{"properties":{"p":{"type":"string","pattern":"^[a-z]*$"}}}`)
	msg = s2.Validate(map[string]any{"p": secret}).Error()
	if strings.Count(msg, "S3CRET") > 30 || !strings.Contains(msg, "bytes cut") {
		t.Fatalf("value echoed: %d bytes", len(msg))
	}
}

func TestValidate_DeepArgumentsRefused(t *testing.T) {
	s := mustCompile(t, `{}`)
	var v any = "leaf"
	for i := 0; i < 300; i++ {
		v = []any{v}
	}
	err := s.Validate(map[string]any{"a": v})
	if err == nil || !strings.Contains(err.Error(), "deeper than 256 levels") {
		t.Fatalf("got %v", err)
	}
}

// fanOut is a schema of a few hundred bytes whose validation evaluates
// 2^n subschemas: each level refers twice to the next.
func fanOut(n int) string {
	var defs []string
	for i := 0; i < n; i++ {
		defs = append(defs, fmt.Sprintf(`"d%d":{"allOf":[{"$ref":"#/$defs/d%d"},{"$ref":"#/$defs/d%d"}]}`, i, i+1, i+1))
	}
	defs = append(defs, fmt.Sprintf(`"d%d":{"type":"object"}`, n))
	return `{"$defs":{` + strings.Join(defs, ",") + `},"$ref":"#/$defs/d0"}`
}

func TestValidate_FanOutBounded(t *testing.T) {
	s := mustCompile(t, fanOut(40)) // 2^40 evaluations unbounded
	var err error
	used := allocated(func() { err = s.Validate(map[string]any{}) })
	if err == nil || !strings.Contains(err.Error(), "schema evaluations") {
		t.Fatalf("got %v", err)
	}
	t.Logf("fan-out schema (%d levels) stopped, %d bytes allocated: %v", 40, used, err)
	// Stopped at 17,000 evaluations: 3.7 MB today. Unbounded, 2^16
	// evaluations allocate 57 MB, 2^20 906 MB (and 2^40 never end).
	if used > 32<<20 {
		t.Fatalf("allocated %d bytes, over 32 MiB", used)
	}
	// Small fan-out within budget validates normally.
	if err := mustCompile(t, fanOut(5)).Validate(map[string]any{}); err != nil {
		t.Fatal(err)
	}
	// The budget grows with the arguments: a recursive schema over a
	// large, deep document is not refused.
	tree := mustCompile(t, `{"$defs":{"v":{"anyOf":[{"type":"string"},{"type":"number"},{"type":"array","items":{"$ref":"#/$defs/v"}},{"type":"object","additionalProperties":{"$ref":"#/$defs/v"}}]}},"$ref":"#/$defs/v"}`)
	var v any = "leaf"
	for i := 0; i < 250; i++ {
		v = map[string]any{"k": v, "n": json.Number("1"), "a": []any{"x", "y"}}
	}
	if err := tree.Validate(v); err != nil {
		t.Fatal(err)
	}
}

func TestValidate_Concurrent(t *testing.T) {
	s := mustCompile(t, `{"type":"object","properties":{"n":{"type":"integer","maximum":100},"s":{"type":"string","pattern":"^[a-z]+$"}},"required":["n"]}`)
	good := decode(t, `{"n":5,"s":"abc"}`)
	bad := decode(t, `{"n":500,"s":"ABC"}`)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 300; i++ {
				if (i+g)%2 == 0 {
					if err := s.Validate(good); err != nil {
						t.Errorf("good: %v", err)
						return
					}
				} else {
					var ve *ValidationError
					if err := s.Validate(bad); !errors.As(err, &ve) || len(ve.Failures) != 2 {
						t.Errorf("bad: %v", err)
						return
					}
				}
			}
		}(g)
	}
	wg.Wait()
}

// TestPin_WhitespaceChangesDigestNotBehaviour: the pin is over the exact
// bytes, compiled behaviour over the meaning.
func TestPin_WhitespaceChangesDigestNotBehaviour(t *testing.T) {
	a, err := ParseTool([]byte(`{"name":"w","inputSchema":{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}}`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := ParseTool([]byte(`{"name":"w","inputSchema":{ "type" : "object",` + "\n\t" + `"properties":{"n":{"type":"integer"}},"required":["n"] }}`))
	if err != nil {
		t.Fatal(err)
	}
	if a.Digest() == b.Digest() {
		t.Fatal("whitespace-only change kept the pin digest")
	}
	sa, sb := mustCompile(t, string(a.InputSchema)), mustCompile(t, string(b.InputSchema))
	for _, doc := range []string{`{"n":1}`, `{}`, `{"n":"x"}`, `{"n":1.5}`, `[]`} {
		ea, eb := sa.Validate(decode(t, doc)), sb.Validate(decode(t, doc))
		if fmt.Sprint(ea) != fmt.Sprint(eb) {
			t.Fatalf("%s: %v vs %v", doc, ea, eb)
		}
	}
	c := NewSchemaCache(SchemaLimits{}, 0)
	ca, err1 := c.Compile(a.InputSchema)
	cb, err2 := c.Compile(b.InputSchema)
	if err1 != nil || err2 != nil || ca != cb || c.Len() != 1 {
		t.Fatalf("cache: %p %p %v %v len %d", ca, cb, err1, err2, c.Len())
	}
}

func TestSchemaCache(t *testing.T) {
	c := NewSchemaCache(SchemaLimits{MaxBytes: 200}, 4)
	s1, err := c.Compile([]byte(`{"type":"object"}`))
	if err != nil {
		t.Fatal(err)
	}
	if s2, _ := c.Compile([]byte(`{"type":"object"}`)); s2 != s1 {
		t.Fatal("not cached")
	}
	// The size cap applies to the raw bytes, even when the canonical form
	// is cached.
	if _, err := c.Compile([]byte(`{"type":"object"` + strings.Repeat(" ", 300) + `}`)); err == nil || !strings.Contains(err.Error(), "byte limit") {
		t.Fatalf("oversized whitespace variant: %v", err)
	}
	// Refusals are cached too, and stay refusals.
	for i := 0; i < 2; i++ {
		if _, err := c.Compile([]byte(`{"$ref":"https://example.com/x"}`)); err == nil {
			t.Fatal("refused schema accepted")
		}
	}
	if _, err := c.Compile([]byte(`{"a":1,"a":2}`)); err == nil || !strings.Contains(err.Error(), "not strict JSON") {
		t.Fatalf("duplicate key: %v", err)
	}
	for i := 0; i < 10; i++ {
		if _, err := c.Compile([]byte(fmt.Sprintf(`{"maxLength":%d}`, i))); err != nil {
			t.Fatal(err)
		}
	}
	if c.Len() > 4 {
		t.Fatalf("cache holds %d entries, max 4", c.Len())
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				s, err := c.Compile([]byte(fmt.Sprintf(`{"minLength":%d}`, (i+g)%6)))
				if err != nil {
					t.Error(err)
					return
				}
				if err := s.Validate("abcdefghij"); err != nil {
					t.Error(err)
					return
				}
			}
		}(g)
	}
	wg.Wait()
	if c.Len() > 4 {
		t.Fatalf("cache holds %d entries, max 4", c.Len())
	}
}

func TestECMAToRE2(t *testing.T) {
	for in, want := range map[string]string{
		`^[a-z]+$`:            `^[a-z]+$`,
		`^[^\u0000]+$`:        `^[^\x{0}]+$`,
		`[\u0000-\u001F]`:     `[\x{0}-\x{1F}]`,
		`\\u0041`:             `\\u0041`,
		`\\\u0041`:            `\\\x{41}`,
		`\uD83D\uDE00`:        `\x{1F600}`,
		`\uD83D`:              `\x{D83D}`,
		`\u{1F600}`:           `\x{1F600}`,
		`\u12`:                `\u12`,
		`\d\w\/`:              `\d\w\/`,
		`a\u00e9b`:            `a\x{E9}b`,
		`x\u`:                 `x\u`,
		`\u{}`:                `\u{}`,
		`\u{zz}`:              `\u{zz}`,
		`[\u0041-\u005A]{2,}`: `[\x{41}-\x{5A}]{2,}`,
	} {
		if got := ecmaToRE2(in); got != want {
			t.Errorf("ecmaToRE2(%q) = %q, want %q", in, got, want)
		}
	}
	re, err := (&regexBudget{}).compile(`^[^\u0000]+$`)
	if err != nil || re.MatchString("a\x00b") || !re.MatchString("ab") || re.String() != `^[^\u0000]+$` {
		t.Fatalf("compile: %v %v", re, err)
	}
	if _, err := (&regexBudget{}).compile(`a(?=b)`); err == nil {
		t.Error("a lookahead compiled")
	}
}

func FuzzCompileSchema(f *testing.F) {
	for _, s := range []string{
		`{}`,
		`{"type":"object","properties":{"a":{"type":"string","pattern":"^[^\\u0000]+$"}},"required":["a"],"additionalProperties":false}`,
		`{"$schema":"http://json-schema.org/draft-07/schema#","definitions":{"x":{"type":"string"}},"properties":{"a":{"$ref":"#/definitions/x"}},"dependencies":{"a":["b"]}}`,
		`{"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}},"$ref":"#/$defs/a"}`,
		`{"$defs":{"n":{"$anchor":"n","anyOf":[{"type":"string"},{"items":{"$ref":"#n"}}]}},"$ref":"#n"}`,
		`{"$ref":"file:///etc/passwd"}`,
		`{"$schema":"https://json-schema.org/draft/2019-09/schema","$recursiveAnchor":true,"items":{"$recursiveRef":"#"}}`,
		`{"$dynamicAnchor":"m","items":{"$dynamicRef":"#m"}}`,
		fanOut(30),
		nested(63),
		`{"anyOf":[` + strings.TrimSuffix(strings.Repeat(`{},`, 5000), ",") + `]}`,
		`{"properties":{"a":{"pattern":"^((a|b){1,100}){1,10}$"},"b":{"pattern":"^(x|y){1,999}$"}},"patternProperties":{"^[\\u0041-\\u005a]{1,500}$":{}}}`,
		`{"enum":[1,2,{"a":[null,true]}],"const":1e2,"multipleOf":0.1}`,
		`{"if":{"required":["a"]},"then":{"not":{"required":["b"]}},"else":{"minProperties":2}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if len(raw) > 64<<10 {
			return
		}
		// Work is bounded in bytes allocated, not time (a loaded machine
		// stretches time): the costliest seeds and the CostBounded cases
		// allocate under 80 MB; the uncapped shapes, hundreds of MB to GB.
		var s *Schema
		var err error
		if used := allocated(func() { s, err = CompileSchema(raw, SchemaLimits{}) }); used > 512<<20 {
			t.Fatalf("CompileSchema allocated %d bytes", used)
		}
		if err != nil {
			if err.Error() == "" || strings.Contains(err.Error(), "\n") {
				t.Fatalf("bad error %q", err)
			}
			return
		}
		for _, doc := range []any{map[string]any{}, map[string]any{"a": "x", "b": []any{json.Number("1")}}} {
			if used := allocated(func() { _ = s.Validate(doc) }); used > 256<<20 {
				t.Fatalf("Validate allocated %d bytes", used)
			}
		}
	})
}
