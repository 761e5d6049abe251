package config

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/mcp-guard/mcp-guard/classify"
)

var predicateKeys = []string{"equals", "one_of", "prefix", "glob", "regex", "path", "max_length", "absent"}

func parsePredicate(m map[string]any) (classify.Predicate, error) {
	var p classify.Predicate
	if len(m) == 0 {
		return p, fmt.Errorf("want a table with one of %s, such as { equals = \"x\" }", strings.Join(predicateKeys, ", "))
	}
	if len(m) != 1 {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		return p, fmt.Errorf("give exactly one of %s (got %d: %s)", strings.Join(predicateKeys, ", "), len(m), strings.Join(keys, ", "))
	}
	for k, v := range m {
		str := func() (*string, error) {
			s, ok := v.(string)
			if !ok {
				return nil, fmt.Errorf("%s: want a string, got %s", k, tomlType(v))
			}
			return &s, nil
		}
		var err error
		switch k {
		case "equals":
			if !isScalar(v) {
				return p, fmt.Errorf("equals: want a string, number or boolean, got %s", tomlType(v))
			}
			p.Equals = v
		case "one_of":
			arr, ok := v.([]any)
			if !ok || len(arr) == 0 {
				return p, fmt.Errorf("one_of: want a non-empty array, got %s", tomlType(v))
			}
			for i, e := range arr {
				if !isScalar(e) {
					return p, fmt.Errorf("one_of[%d]: want a string, number or boolean, got %s", i, tomlType(e))
				}
			}
			p.OneOf = arr
		case "prefix":
			p.Prefix, err = str()
		case "glob":
			p.Glob, err = str()
		case "regex":
			p.Regex, err = str()
		case "path":
			p.Path, err = str()
		case "max_length":
			n, ok := v.(int64)
			if !ok || n < 0 {
				return p, fmt.Errorf("max_length: want a non-negative integer, got %s", tomlType(v))
			}
			p.MaxLength = &n
		case "absent":
			b, ok := v.(bool)
			if !ok {
				return p, fmt.Errorf("absent: want true or false, got %s", tomlType(v))
			}
			p.Absent = &b
		default:
			return p, fmt.Errorf("%q: unknown predicate; want one of %s", k, strings.Join(predicateKeys, ", "))
		}
		if err != nil {
			return p, err
		}
	}
	return p, nil
}

func isScalar(v any) bool {
	switch v.(type) {
	case string, int64, float64, bool:
		return true
	}
	return false
}

func tomlType(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case int64:
		return "an integer"
	case float64:
		return "a float"
	case bool:
		return "a boolean"
	case []any:
		return "an array"
	case map[string]any:
		return "a table"
	case time.Time:
		return "a datetime"
	}
	return fmt.Sprintf("%T", v)
}
