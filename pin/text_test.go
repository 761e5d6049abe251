package pin

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mcp-guard/mcp-guard/internal/safetext"
)

// toolJSON builds a raw tool whose description is desc (JSON-encoded, so
// control characters arrive as \u escapes as a real server would send
// them).
func toolJSON(t testing.TB, desc string) Tool {
	t.Helper()
	d, _ := json.Marshal(desc)
	tool, err := ParseTool([]byte(`{"name":"t","description":` + string(d) + `,"inputSchema":{"type":"object"}}`))
	if err != nil {
		t.Fatal(err)
	}
	return tool
}

func TestCheckText_Passes(t *testing.T) {
	for _, desc := range []string{
		"Reads a file.\nArguments:\n\tpath: where",
		"Café, naïve, Ångström, résumé",
		"e\u0301 combining acute, a\u0308, Z̤̈",
		"日本語の説明、中文说明、한국어 설명",
		"Emoji: 🔥 ✅ 👍🏽 ❤️ 🇫🇷",
		"ZWJ sequences: 👩‍💻 👨‍👩‍👧 🏳️‍🌈",
		"Subdivision flags: 🏴󠁧󠁢󠁥󠁮󠁧󠁿 🏴󠁧󠁢󠁳󠁣󠁴󠁿 🏴󠁧󠁢󠁷󠁬󠁳󠁿",
		"Persian with ZWNJ: می\u200cخواهم نمی\u200cدانم",
		"Hindi with ZWJ/ZWNJ: क्\u200dष क्\u200cष",
		"Arabic: مرحبا بالعالم, Hebrew: שלום",
		"Greek Ελληνικά, Cyrillic Кириллица, Thai ภาษาไทย",
		"math ∀x ∈ ℝ: x² ≥ 0, arrows → ⇒, quotes “ ” « »",
		"",
	} {
		if ps := CheckText(toolJSON(t, desc)); len(ps) != 0 {
			t.Errorf("%q: false positive: %s", desc, DescribeProblems(ps))
		}
	}
}

func TestCheckText_Refuses(t *testing.T) {
	for _, tc := range []struct {
		desc string
		want []TextProblem
	}{
		{"a\x1b[31mred", []TextProblem{{"description", 0x1B, KindEscape}}},
		{"osc \x1b]8;;http://evil\x07link", []TextProblem{{"description", 0x1B, KindEscape}, {"description", 0x07, KindControl}}},
		{"nul\x00", []TextProblem{{"description", 0, KindControl}}},
		{"cr\rcounts", []TextProblem{{"description", '\r', KindControl}}},
		{"del\x7f", []TextProblem{{"description", 0x7F, KindControl}}},
		{"c1 \u0085 \u009b", []TextProblem{{"description", 0x85, KindControl}, {"description", 0x9B, KindControl}}},
		{"bidi \u202Eevil\u202C", []TextProblem{{"description", 0x202E, KindBidi}, {"description", 0x202C, KindBidi}}},
		{"isolates \u2066x\u2069 \u2067\u2068", []TextProblem{{"description", 0x2066, KindBidi}, {"description", 0x2069, KindBidi}, {"description", 0x2067, KindBidi}, {"description", 0x2068, KindBidi}}},
		{"marks \u200E\u200F\u061C", []TextProblem{{"description", 0x200E, KindBidi}, {"description", 0x200F, KindBidi}, {"description", 0x061C, KindBidi}}},
		{"zw\u200B\u2060\uFEFF\u180E", []TextProblem{{"description", 0x200B, KindZeroWidth}, {"description", 0x2060, KindZeroWidth}, {"description", 0xFEFF, KindZeroWidth}, {"description", 0x180E, KindZeroWidth}}},
		{"ad\u200Cmin", []TextProblem{{"description", 0x200C, KindZeroWidth}}},
		{"a\u200Db", []TextProblem{{"description", 0x200D, KindZeroWidth}}},
		{"👩\u200D\u200D💻", []TextProblem{{"description", 0x200D, KindZeroWidth}, {"description", 0x200D, KindZeroWidth}}},
		{"\u200Dstart", []TextProblem{{"description", 0x200D, KindZeroWidth}}},
		{"tags \U000E0041\U000E0042", []TextProblem{{"description", 0xE0041, KindTag}, {"description", 0xE0042, KindTag}}},
		{"fake flag 🏴\U000E0068\U000E0069\U000E007F", []TextProblem{{"description", 0xE0068, KindTag}, {"description", 0xE0069, KindTag}, {"description", 0xE007F, KindTag}}},
		{"unterminated flag 🏴\U000E0067\U000E0062\U000E0065\U000E006E\U000E0067", []TextProblem{
			{"description", 0xE0067, KindTag}, {"description", 0xE0062, KindTag}, {"description", 0xE0065, KindTag}, {"description", 0xE006E, KindTag}, {"description", 0xE0067, KindTag}}},
	} {
		got := CheckText(toolJSON(t, tc.desc))
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%q:\n got %v\nwant %v", tc.desc, got, tc.want)
		}
	}
}

func TestCheckText_EveryPlace(t *testing.T) {
	raw := "{\"name\":\"t\",\"title\":\"T\\u001b\",\"description\":\"bad \xff byte and \\ud800 lone\"," +
		`"inputSchema":{"type":"object","properties":{"pa\u202eth":{"type":"string","description":"x\u200by"},"a/b~c":{"enum":["ok","\u0007"]}}},` +
		`"outputSchema":{"properties":{"r":{"title":"\u2066"}}},` +
		`"annotations":{"title":"\udb40\udc41"},"_meta":{"x":"\u001b ignored"}}`
	tool, err := ParseTool([]byte(raw))
	if err != nil {
		t.Fatal(err)
	}
	got := CheckText(tool)
	want := []TextProblem{
		{"title", 0x1B, KindEscape},
		{"description", 0xFF, KindInvalidUTF8},
		{"description", 0xD800, KindInvalidUTF8},
		{`inputSchema/properties/pa\u{202E}th`, 0x202E, KindBidi},
		{`inputSchema/properties/pa\u{202E}th/description`, 0x200B, KindZeroWidth},
		{"inputSchema/properties/a~1b~0c/enum/1", 0x07, KindControl},
		{"outputSchema/properties/r/title", 0x2066, KindBidi},
		{"annotations/title", 0xE0041, KindTag},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got\n%v\nwant\n%v", got, want)
	}
	line := DescribeProblems(got)
	for _, part := range []string{
		"title has U+001B (ANSI/OSC escape)",
		"description has byte 0xFF (invalid UTF-8), U+D800 (invalid UTF-8)",
		`inputSchema/properties/pa\u{202E}th has U+202E (bidi control)`,
		"annotations/title has U+E0041 (tag character)",
	} {
		if !strings.Contains(line, part) {
			t.Errorf("DescribeProblems lacks %q:\n%s", part, line)
		}
	}
	assertDisplaySafe(t, line)

	// Without Raw, the decoded fields are checked.
	got = CheckText(Tool{Title: "x\u202e", Description: "ok", InputSchema: []byte(`{"description":"\u200b"}`)})
	want = []TextProblem{{"title", 0x202E, KindBidi}, {"inputSchema/description", 0x200B, KindZeroWidth}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("fields: got %v want %v", got, want)
	}
}

func TestCheckText_Capped(t *testing.T) {
	tool := toolJSON(t, strings.Repeat("\u200B", 1000))
	ps := CheckText(tool)
	if len(ps) != MaxTextProblems {
		t.Fatalf("%d problems, want %d", len(ps), MaxTextProblems)
	}
	if d := DescribeProblems(ps); d != "description has U+200B (zero-width) ×20" {
		t.Fatalf("DescribeProblems = %q", d)
	}
}

func TestDescribeProblems(t *testing.T) {
	got := DescribeProblems([]TextProblem{
		{"description", 0x202E, KindBidi},
		{"description", 0xE0041, KindTag},
		{"title", 0x1B, KindEscape},
	})
	want := "description has U+202E (bidi control), U+E0041 (tag character); title has U+001B (ANSI/OSC escape)"
	if got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
	if DescribeProblems(nil) != "" {
		t.Fatal("no problems, not empty")
	}
	// A hand-made Where cannot smuggle escapes onto a terminal.
	assertDisplaySafe(t, DescribeProblems([]TextProblem{{"x\x1b[2J\u202e", 1, "k\x1b"}}))
}

func assertDisplaySafe(t *testing.T, s string) {
	t.Helper()
	if !utf8.ValidString(s) {
		t.Fatalf("not UTF-8: %q", s)
	}
	for _, r := range s {
		if safetext.Suspicious(r) {
			t.Fatalf("unescaped %U in %q", r, s)
		}
	}
}

func TestWalkJSON_Malformed(t *testing.T) {
	for _, raw := range []string{``, `{`, `}`, `]]]`, `{"a`, `{"a":"b\`, `"\u12`, `[1,2,"x`, `{"a" "b" "c"}`, `{:}`} {
		CheckText(Tool{InputSchema: []byte(raw)})
	}
	// 100,000 nested levels: no recursion, no stack overflow.
	deep := strings.Repeat(`{"a":`, 100000) + `"\u202e"` + strings.Repeat(`}`, 100000)
	if ps := CheckText(Tool{InputSchema: []byte(deep)}); len(ps) != 1 || ps[0].Rune != 0x202E {
		t.Fatalf("deep: %v", ps)
	}
}

func FuzzCheckText(f *testing.F) {
	f.Add([]byte(`{"name":"t","title":"a\u001b","description":"\u202e","inputSchema":{"properties":{"k\u200b":{"description":"\udb40\udc41"}}}}`), "title \x1b\xff", "desc 👩\u200d💻 🏴\U000E0067\U000E0062\U000E0065\U000E006E\U000E0067\U000E007F")
	f.Add([]byte(`{"name":"t","inputSchema":{}}`), "", "plain")
	f.Fuzz(func(t *testing.T, raw []byte, title, desc string) {
		tools := []Tool{
			{Title: title, Description: desc, InputSchema: raw, OutputSchema: raw, Annotations: raw},
			{Raw: raw, InputSchema: raw},
		}
		if tool, err := ParseTool(raw); err == nil {
			tools = append(tools, tool)
		}
		for _, tool := range tools {
			ps := CheckText(tool)
			if len(ps) > MaxTextProblems {
				t.Fatalf("%d problems", len(ps))
			}
			for _, p := range ps {
				if p.Kind == "" {
					t.Fatalf("problem without kind: %+v", p)
				}
				assertDisplaySafe(t, p.Where)
			}
			assertDisplaySafe(t, DescribeProblems(ps))
		}
		// Every character CheckText can flag in a plain description is
		// flagged unless it is part of allowed joiner or flag context.
		if len(CheckText(Tool{Description: desc})) == 0 {
			for _, r := range desc {
				if k := textKind(r); k != "" && r != 0x200C && r != 0x200D && k != KindTag {
					t.Fatalf("%U (%s) in %q not reported", r, k, desc)
				}
			}
			if !utf8.ValidString(desc) {
				t.Fatalf("invalid UTF-8 in %q not reported", desc)
			}
		}
	})
}

func ExampleDescribeProblems() {
	tool, _ := ParseTool([]byte(`{"name":"t","title":"\u001b[2J","description":"safe \u202etxt.exe","inputSchema":{}}`))
	fmt.Println(DescribeProblems(CheckText(tool)))
	// Output: title has U+001B (ANSI/OSC escape); description has U+202E (bidi control)
}
