package config

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
)

// lastKeyRE reads the key out of the decoder's type errors: `toml: line 6
// (last key "server.command"): incompatible types: ...`.
var lastKeyRE = regexp.MustCompile(`^toml: (?:line \d+ )?\(last key ("(?:[^"\\]|\\.)*")\): `)

var typesRE = regexp.MustCompile(`^incompatible types: TOML value has type (\S+); destination has type (.+)$`)

// typeError locates a decoding error that is not a syntax error: a value
// of the wrong type. The decoder names the key but, for [[server]] and
// [[rule]], the line of the last element that has it, whichever one failed;
// the failing element is found by decoding each on its own.
func typeError(path, src string, err error) *Error {
	msg := err.Error()
	m := lastKeyRE.FindStringSubmatch(msg)
	if m == nil {
		return newError(path, nil, []error{err})
	}
	last, uerr := strconv.Unquote(m[1])
	if uerr != nil || last == "" {
		return newError(path, nil, []error{err})
	}
	reason := msg[len(m[0]):]
	if t := typesRE.FindStringSubmatch(reason); t != nil {
		reason = fmt.Sprintf("the value is %s; want %s", typeWord(t[1]), typeWord(t[2]))
	}
	// last is written as TOML writes a key (rule.when."/p"): index its element.
	first, rest, _ := strings.Cut(last, ".")
	if n := failingElement(src, first); n > 0 && !strings.ContainsAny(first, `"'`) {
		last = fmt.Sprintf("%s[%d]", first, n)
		if rest != "" {
			last += "." + rest
		}
	}
	return newError(path, scanPositions(src), []error{fmt.Errorf("%s: %s", last, reason)})
}

// failingElement is the 1-based index of the first [[server]] or [[rule]]
// (as array says) that does not decode, or 0.
func failingElement(src, array string) int {
	var shadow struct {
		Server []toml.Primitive `toml:"server"`
		Rule   []toml.Primitive `toml:"rule"`
	}
	md, err := toml.Decode(src, &shadow)
	if err != nil {
		return 0
	}
	try := func(elems []toml.Primitive, dst func() any) int {
		for i, p := range elems {
			if md.PrimitiveDecode(p, dst()) != nil {
				return i + 1
			}
		}
		return 0
	}
	switch array {
	case "server":
		return try(shadow.Server, func() any { return new(ServerConfig) })
	case "rule":
		return try(shadow.Rule, func() any { return new(RuleConfig) })
	}
	return 0
}

// typeWord is a decoder's type name as the README speaks of TOML values.
func typeWord(t string) string {
	switch t {
	case "String", "string":
		return "a string"
	case "Integer", "integer", "int64":
		return "an integer"
	case "Float", "float", "float64":
		return "a float"
	case "Boolean", "boolean", "bool":
		return "true or false"
	case "Array", "slice", "array", "[]any":
		return "an array"
	case "Hash", "map", "table", "map[string]any":
		return "a table"
	case "time.Time", "toml.LocalDate", "toml.LocalTime", "toml.LocalDatetime":
		return "a date or time"
	}
	return t
}
