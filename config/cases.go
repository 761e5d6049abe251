package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"

	"github.com/mcp-guard/mcp-guard/classify"
)

// Case is one decision test of the operator's rules, a [[case]] of a test
// file (mcp-guard test): a tool call and what serve must decide for it.
type Case struct {
	Name         string // optional, for the report
	Server, Tool string // from call = "SERVER/TOOL"
	// Args is the arguments as JSON: a table converted (keys sorted), or a
	// string taken as the exact bytes a host would send ("{}" when absent).
	Args   []byte
	Labels []string // the session's labels; none when absent
	Expect string   // one of Expectations
	Rule   int      // the rule that must decide (1-based); 0: any
	Line   int      // where its [[case]] is written
}

// Expectations are the outcomes a case may expect: forwarded, held for
// the operator, refused (by a rule, a flow, a limit or the secrets
// check), refused as unreadable or against the pinned schema, or not shown
// to the host at all.
var Expectations = []string{"allow", "ask", "deny", "invalid", "hidden"}

type caseFile struct {
	Case []struct {
		Name   string   `toml:"name"`
		Call   string   `toml:"call"`
		Args   any      `toml:"args"`
		Labels []string `toml:"labels"`
		Expect string   `toml:"expect"`
		Rule   *int64   `toml:"rule"`
	} `toml:"case"`
}

// LoadCases reads a test file of [[case]] entries for cfg, refusing,
// each located, an unknown key, a call to no configured server, an
// expectation not in Expectations, a rule cfg does not have, a label that
// is not one, and arguments that are not an object.
func LoadCases(path string, cfg *Config) ([]Case, error) {
	src, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		err = errors.New("no test file here: write [[case]] entries (mcp-guard init writes a starter), or name one: mcp-guard test FILE")
	}
	if err == nil && len(src) > maxConfigBytes {
		err = fmt.Errorf("the file is %d bytes; a test file may be at most %d", len(src), maxConfigBytes)
	}
	if err != nil {
		return nil, &Error{path: path, what: "test file", problems: []Problem{{Msg: err.Error()}}}
	}
	text := string(src)
	if line, ok := nestingWithin(text, maxConfigNesting); !ok {
		return nil, &Error{path: path, what: "test file", problems: []Problem{{Line: line, Col: 1,
			Msg: fmt.Sprintf("arrays and inline tables nest more than %d levels", maxConfigNesting)}}}
	}
	var f caseFile
	md, err := toml.Decode(text, &f)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			line, col := (&positions{src: text}).lineCol(pe.Position.Start)
			return nil, &Error{path: path, what: "test file", problems: []Problem{{Line: line, Col: col, Msg: pe.Message}}}
		}
		e := typeError(path, text, err)
		e.what = "test file"
		return nil, e
	}
	pos := scanPositions(text)
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	und := slices.DeleteFunc(md.Undecoded(), func(k toml.Key) bool {
		return len(k) > 2 && k[0] == "case" && k[1] == "args" // decoded as any
	})
	if len(und) > 0 {
		var generic map[string]any
		_, _ = toml.Decode(text, &generic)
		for _, k := range locateKeys(generic, und) {
			add("%s: unknown key: a case has name, call, args, labels, expect and rule", k)
		}
	}
	if len(f.Case) == 0 {
		add("no [[case]]: write at least one, e.g. [[case]] call = \"fs/read_file\" args = { path = \"/tmp/a\" } expect = \"allow\"")
	}
	servers := cfg.ServerNames()
	cases := make([]Case, len(f.Case))
	for i, fc := range f.Case {
		at := fmt.Sprintf("case[%d]", i+1)
		c := Case{Name: fc.Name, Labels: fc.Labels, Expect: fc.Expect, Args: []byte("{}")}
		if off, ok := pos.find([]string{fmt.Sprintf("case[%d]", i+1)}); ok {
			c.Line, _ = pos.lineCol(off)
		}
		server, tool, ok := strings.Cut(fc.Call, "/")
		switch {
		case fc.Call == "":
			add("%s.call: missing: want \"SERVER/TOOL\", e.g. \"fs/read_file\"", at)
		case !ok || server == "" || tool == "":
			add("%s.call: %q: want \"SERVER/TOOL\", e.g. \"fs/read_file\"", at, fc.Call)
		case !slices.Contains(servers, server):
			add("%s.call: %q: the config has no server %q (it has %s)", at, fc.Call, server, strings.Join(servers, ", "))
		}
		c.Server, c.Tool = server, tool
		switch {
		case fc.Expect == "":
			add("%s.expect: missing: want one of %s", at, strings.Join(Expectations, ", "))
		case !slices.Contains(Expectations, fc.Expect):
			add("%s.expect: %q: want one of %s", at, fc.Expect, strings.Join(Expectations, ", "))
		}
		if fc.Rule != nil {
			if *fc.Rule < 1 || *fc.Rule > int64(len(cfg.Rules)) {
				add("%s.rule: %d: the config has rules 1 to %d", at, *fc.Rule, len(cfg.Rules))
			} else {
				c.Rule = int(*fc.Rule)
			}
		}
		for j, l := range fc.Labels {
			if !classify.ValidLabel(l) {
				add("%s.labels[%d]: %q is not a label (1-32 lowercase letters, digits, '_' or '-', starting with a letter)", at, j+1, l)
			}
		}
		switch a := fc.Args.(type) {
		case nil:
		case string:
			c.Args = []byte(a) // exact bytes: the pipeline reads them strictly
		case map[string]any:
			b, err := argsJSON(a)
			if err != nil {
				add("%s.args: %v", at, err)
			}
			c.Args = b
		default:
			add("%s.args: want a table, or a string holding the exact JSON, got %s", at, tomlType(a))
		}
		cases[i] = c
	}
	if len(errs) > 0 {
		e := newError(path, pos, errs)
		e.what = "test file"
		return nil, e
	}
	return cases, nil
}

// argsJSON is a TOML table as JSON, its keys sorted. A datetime has no
// JSON form and is refused, as are NaN and the infinities.
func argsJSON(m map[string]any) ([]byte, error) {
	var check func(at string, v any) error
	check = func(at string, v any) error {
		switch t := v.(type) {
		case map[string]any:
			for k, e := range t {
				if err := check(at+"."+k, e); err != nil {
					return err
				}
			}
		case []any:
			for i, e := range t {
				if err := check(fmt.Sprintf("%s[%d]", at, i+1), e); err != nil {
					return err
				}
			}
		case float64:
			if math.IsNaN(t) || math.IsInf(t, 0) {
				return fmt.Errorf("%s: %v has no JSON form", strings.TrimPrefix(at, "."), t)
			}
		case string, int64, bool:
		default:
			return fmt.Errorf("%s: %s has no JSON form; write it as a string", strings.TrimPrefix(at, "."), tomlType(v))
		}
		return nil
	}
	if err := check("", m); err != nil {
		return nil, err
	}
	return json.Marshal(m)
}
