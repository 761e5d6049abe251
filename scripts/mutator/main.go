// Command mutator checks that mcp-guard's guards are tested: for each entry
// in testdata/mutations.txt it removes one guard from the source (an exact,
// unique text replacement), runs the tests named for it, and requires them to
// fail. The file is restored after each entry, whatever happens.
//
// Entry format (blank lines and # comments between entries are ignored):
//
//	[ID]
//	file = path/to/file.go
//	find = "Go-quoted exact text, found exactly once"
//	replace = "Go-quoted replacement"
//	test = ./pkg -run '^TestName$'
//
// Usage: go run ./scripts/mutator [-list | -check] [ID...]
//
// -check runs no test: it says which entries are malformed (a repeated ID, a
// repeated key, a find text that does not occur exactly once, a test that
// names no test function of its package) and exits 1 if any is. A run whose
// test ran no test is broken, never "survived".
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

type mutation struct {
	id, file, find, replace string
	test                    []string
	line                    int
}

func main() {
	list := flag.Bool("list", false, "list the mutations and exit")
	check := flag.Bool("check", false, "check every entry's form and find text, run no test")
	path := flag.String("f", "testdata/mutations.txt", "mutation list")
	flag.Parse()
	muts, err := parse(*path)
	if err != nil {
		fmt.Fprintf(os.Stderr, "mutate: %v\n", err)
		os.Exit(2)
	}
	if *check {
		bad := 0
		for _, m := range muts {
			orig, err := os.ReadFile(m.file)
			if err != nil {
				fmt.Printf("BROKEN    %s: %v\n", m.id, err)
				bad++
				continue
			}
			if n := bytes.Count(orig, []byte(m.find)); n != 1 {
				fmt.Printf("BROKEN    %s: mutations.txt:%d: find text occurs %d times in %s, want exactly once\n", m.id, m.line, n, m.file)
				bad++
			}
			if why := namesATest(m.test); why != "" {
				fmt.Printf("BROKEN    %s: mutations.txt:%d: %s\n", m.id, m.line, why)
				bad++
			}
		}
		fmt.Printf("%d entries, %d malformed\n", len(muts), bad)
		if bad > 0 {
			os.Exit(1)
		}
		return
	}
	want := map[string]bool{}
	for _, id := range flag.Args() {
		want[id] = true
	}
	killed, survived, broken := 0, 0, 0
	for _, m := range muts {
		if len(want) > 0 && !want[m.id] {
			continue
		}
		if *list {
			fmt.Printf("%s\t%s\t%s\n", m.id, m.file, strings.Join(m.test, " "))
			continue
		}
		switch res := run(m); res {
		case "killed":
			killed++
			fmt.Printf("killed    %s\n", m.id)
		case "survived":
			survived++
			fmt.Printf("SURVIVED  %s: removing the guard in %s did not fail %s\n", m.id, m.file, strings.Join(m.test, " "))
		default:
			broken++
			fmt.Printf("BROKEN    %s: %s\n", m.id, res)
		}
	}
	if *list {
		return
	}
	fmt.Printf("%d killed, %d survived, %d broken\n", killed, survived, broken)
	if survived+broken > 0 {
		os.Exit(1)
	}
}

func run(m mutation) string {
	orig, err := os.ReadFile(m.file)
	if err != nil {
		return err.Error()
	}
	if n := bytes.Count(orig, []byte(m.find)); n != 1 {
		return fmt.Sprintf("%s:%d: find text occurs %d times in %s, want exactly once", "mutations.txt", m.line, n, m.file)
	}
	mutated := bytes.Replace(orig, []byte(m.find), []byte(m.replace), 1)
	if err := os.WriteFile(m.file, mutated, 0o644); err != nil {
		return err.Error()
	}
	defer os.WriteFile(m.file, orig, 0o644)
	args := append([]string{"test", "-count=1"}, m.test...)
	cmd := exec.Command("go", args...)
	out, err := cmd.CombinedOutput()
	if bytes.Contains(out, []byte("[build failed]")) || bytes.Contains(out, []byte("[setup failed]")) {
		return "the mutated source does not build, so it proves nothing:\n" + string(out)
	}
	if bytes.Contains(out, []byte("no tests to run")) {
		return "the test run ran no test, so it proves nothing:\n" + string(out)
	}
	if err == nil {
		return "survived"
	}
	if !bytes.Contains(out, []byte("--- FAIL")) && !bytes.Contains(out, []byte("FAIL:")) {
		return "the test run failed without a failing test:\n" + string(out)
	}
	return "killed"
}

// namesATest says what is wrong when test (go test's arguments: a package,
// then -run and others) names no test function of that package by the
// -run pattern's first part: a whole name (^TestX$) or a prefix (^TestX).
// "" when it names one or names none this check can read.
func namesATest(test []string) string {
	if len(test) == 0 {
		return "no test"
	}
	pkg, pattern := test[0], ""
	for i, a := range test {
		if a == "-run" && i+1 < len(test) {
			pattern = test[i+1]
		}
	}
	first, _, _ := strings.Cut(pattern, "/")
	name, ok := strings.CutPrefix(first, "^")
	if !ok || strings.ContainsAny(strings.TrimSuffix(name, "$"), "|()[]*+?.\\") {
		return ""
	}
	whole := strings.HasSuffix(name, "$")
	name = strings.TrimSuffix(name, "$")
	files, _ := filepath.Glob(filepath.Join(pkg, "*_test.go"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			rest, ok := strings.CutPrefix(line, "func "+name)
			if ok && (!whole || strings.HasPrefix(rest, "(")) {
				return ""
			}
		}
	}
	return fmt.Sprintf("%s has no test %s", pkg, pattern)
}

func parse(path string) ([]mutation, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var muts []mutation
	var cur *mutation
	seen := map[string]int{}
	keys := map[string]bool{}
	sc := bufio.NewScanner(f)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]") {
			id := line[1 : len(line)-1]
			if at, ok := seen[id]; ok {
				return nil, fmt.Errorf("%s:%d: [%s] again (first at line %d)", path, n, id, at)
			}
			seen[id] = n
			muts = append(muts, mutation{id: id, line: n})
			cur = &muts[len(muts)-1]
			clear(keys)
			continue
		}
		if cur == nil {
			return nil, fmt.Errorf("%s:%d: text before the first [ID]", path, n)
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("%s:%d: want key = value", path, n)
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if keys[k] {
			return nil, fmt.Errorf("%s:%d: [%s] sets %s twice", path, n, cur.id, k)
		}
		keys[k] = true
		switch k {
		case "file":
			cur.file = v
		case "find", "replace":
			s, err := strconv.Unquote(v)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: %s: want a Go-quoted string: %v", path, n, k, err)
			}
			if k == "find" {
				cur.find = s
			} else {
				cur.replace = s
			}
		case "test":
			cur.test = splitArgs(v)
		default:
			return nil, fmt.Errorf("%s:%d: unknown key %q", path, n, k)
		}
	}
	for _, m := range muts {
		if m.file == "" || m.find == "" || len(m.test) == 0 {
			return nil, fmt.Errorf("%s:%d: [%s] needs file, find and test", path, m.line, m.id)
		}
	}
	return muts, sc.Err()
}

// splitArgs splits on spaces, keeping '...' quoted parts together.
func splitArgs(s string) []string {
	var out []string
	var b strings.Builder
	quoted := false
	for _, r := range s {
		switch {
		case r == '\'':
			quoted = !quoted
		case r == ' ' && !quoted:
			if b.Len() > 0 {
				out = append(out, b.String())
				b.Reset()
			}
		default:
			b.WriteRune(r)
		}
	}
	if b.Len() > 0 {
		out = append(out, b.String())
	}
	return out
}
