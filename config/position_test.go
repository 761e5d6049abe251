package config

import (
	"errors"
	"strings"
	"testing"
)

// Every problem in a config is reported at once, each at the line and
// column where what it is about is written: keys in [[server]] and [[rule]]
// elements (which the decoder cannot tell apart), sub-tables, inline tables,
// array elements, dotted keys. A problem with no place has none.
func TestConfig_EveryProblemLocated(t *testing.T) {
	src := `[pin]
mode = "sometimes"
[[server]]
name = "fs"
command = ["x"]
namespace = false
[[server]]
name = "gs"
command = ["y"]
  roots = ["/ok", "rel"]
[server.sandbox]
read = ["/"]
[[rule]]
server = "fs"
tool = "a"
class = "read"
action = "maybe"
[[rule]]
server = "fss"
tool = "c["
class = "read"
action = "allow"
when = { "/p" = { path = "/a/**", prefix = "/a" }, "/n" = { bigger = 3 } }
[[rule]]
server = "gs"
tool = "d"
class = "read"
acton = "allow"
[ledger]
witness = ["journal", "bogus"]
limits.calls_per_session = 0
`
	want := map[string][2]int{
		`pin.mode:`:                   {2, 1},
		`server[1] (fs).namespace:`:   {6, 1},
		`server[2] (gs).roots[2]:`:    {10, 19},
		`server[2] (gs).sandbox.read`: {12, 1},
		`rule[1].action:`:             {17, 1},
		`rule[2].server:`:             {19, 1},
		`rule[2].tool:`:               {20, 1},
		`rule[2].when."/p":`:          {23, 10},
		`rule[2].when."/n":`:          {23, 52},
		`rule[3].action: missing`:     {24, 1}, // the [[rule]] it is missing from
		`rule[3].acton: unknown key`:  {28, 1},
		`ledger.witness[2]:`:          {30, 23},
	}
	_, err := parse("c.toml", src, mapEnv(map[string]string{"HOME": "/h"}), true, "")
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("want an *Error, got %v", err)
	}
	got := map[string]bool{}
	for _, p := range ce.Problems() {
		for prefix, at := range want {
			if strings.HasPrefix(p.Msg, prefix) {
				got[prefix] = true
				if p.Line != at[0] || p.Col != at[1] {
					t.Errorf("%s at %d:%d, want %d:%d", p.Msg, p.Line, p.Col, at[0], at[1])
				}
			}
		}
	}
	for prefix := range want {
		if !got[prefix] {
			t.Errorf("no problem %q in\n%v", prefix, err)
		}
	}
	if !strings.Contains(err.Error(), "\nc.toml:17:1: rule[1].action: ") {
		t.Errorf("problems are not printed as FILE:LINE:COL: ...\n%v", err)
	}

	// A problem that is about no one key has no place.
	_, err = Parse("e.toml", "[pin]\nmode = \"tofu\"\n", mapEnv(map[string]string{"HOME": "/h"}))
	if !errors.As(err, &ce) || len(ce.Problems()) != 2 || ce.Problems()[0].Line != 0 ||
		!strings.Contains(err.Error(), "\ne.toml: no [[server]]") {
		t.Fatalf("empty config: %v", err)
	}
}

// A value of the wrong type stops the decoder: one problem, in the element
// that holds it, not the last element with that key (the decoder's line).
func TestConfig_TypeErrorInItsElement(t *testing.T) {
	src := minimal + "[[rule]]\nserver = \"fs\"\ntool = 3\nclass = \"read\"\naction = \"allow\"\n" +
		"[[rule]]\nserver = \"fs\"\ntool = \"b\"\nclass = \"read\"\naction = \"allow\"\n"
	_, err := Parse("t.toml", src, mapEnv(map[string]string{"HOME": "/h"}))
	var ce *Error
	if !errors.As(err, &ce) || len(ce.Problems()) != 1 {
		t.Fatalf("want one problem, got %v", err)
	}
	if p := ce.Problems()[0]; p.Line != 12 || p.Col != 1 || p.Msg != "rule[2].tool: the value is an integer; want a string" {
		t.Fatalf("got %d:%d %s", p.Line, p.Col, p.Msg)
	}
}

func TestMessageKey(t *testing.T) {
	for msg, want := range map[string]string{
		`server[2] (fs).sandbox.read: "/" is the whole filesystem`: "server[2] sandbox read",
		`server[1] (a): b).name: x`:                                "server[1]", // an invalid name: its element
		`rule[3].when."/a.b": x`:                                   "rule[3] when /a.b",
		`ledger.witness[2]: "x"`:                                   "ledger witness[2]",
		`pin.mode: "x"`:                                            "pin mode",
		`no [[server]]: mcp-guard needs`:                           "",
		`startup_wait: "0s"`:                                       "startup_wait",
		`the file is 3 bytes`:                                      "",
	} {
		if got := strings.Join(messageKey(msg), " "); got != want {
			t.Errorf("messageKey(%q) = %q, want %q", msg, got, want)
		}
	}
}

// What looks like a header or a key inside a string or a comment is not
// one; headers with spaces, dotted keys and inline tables are followed.
func TestPositions_TrickyText(t *testing.T) {
	src := `# [[rule]] in a comment
[[ server ]]
name = "fs"
command = ["x", """
[[rule]]
tool = "not a key"
"""]
sandbox.read = ["/"]
[[server]]
name = "gs"
command = ['[[rule]]']
sandbox = { read = ["/tmp", "/"] }
[[rule]]   # the first rule
server = "fs"
reason = '''
[[rule]]'''
tool = "a"
class = "read"
action = "nope"
`
	_, err := Parse("p.toml", src, mapEnv(map[string]string{"HOME": "/h"}))
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("want an *Error, got %v", err)
	}
	want := map[string][2]int{
		"server[1] (fs).sandbox.read:": {8, 1},
		"server[2] (gs).sandbox.read:": {12, 13},
		"rule[1].action:":              {19, 1},
	}
	for _, p := range ce.Problems() {
		for prefix, at := range want {
			if strings.HasPrefix(p.Msg, prefix) {
				delete(want, prefix)
				if p.Line != at[0] || p.Col != at[1] {
					t.Errorf("%s at %d:%d, want %d:%d", p.Msg, p.Line, p.Col, at[0], at[1])
				}
			}
		}
	}
	if len(want) > 0 {
		t.Errorf("not reported: %v\n%v", want, err)
	}
}
