package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// conformanceKnownFailures are the server scenarios of the official MCP
// conformance suite that pass against the server directly and fail through
// mcp-guard today, each with its cause and the point of issue 20 that fixes
// it. This list may only shrink: a scenario not on it that fails through
// mcp-guard fails the test. A listed scenario that passes is logged (some
// fail only sometimes); remove it once it passes every time. Empty today:
// tools-call-with-progress, which failed through the HTTP host (issue 20,
// point 1), passes since progress is written on the call's own stream.
var conformanceKnownFailures = map[string]string{}

// The official MCP conformance suite (npm @modelcontextprotocol/conformance)
// runs its server scenarios against go-sdk's conformance everything-server,
// first directly, then through `mcp-guard serve --http` fronting it as an
// HTTP upstream, with rules that allow all of its tools, prompts and
// resources and its sampling and elicitation requests. mcp-guard shows
// names as `conf__<tool>` and URIs as `mcp-guard://conf/<uri>`; the suite
// asks for the server's own, so it reaches mcp-guard through nameMapper,
// which undoes only that prefix. Every scenario that passes directly must
// pass through mcp-guard, except conformanceKnownFailures.
//
// MCP_GUARD_CONFORMANCE_URL=http://.../mcp runs the same against a server
// already running there instead (the suite's own test server, by hand: see
// the README).
func TestConformance_ServerScenariosThroughGuard(t *testing.T) {
	t.Parallel()
	suite := peerPath(t, "../conformance.mjs")
	peerPath(t, "@modelcontextprotocol/conformance/package.json")
	scenarios := conformanceScenarios(t, suite)
	for name := range conformanceKnownFailures {
		if !slices.Contains(scenarios, name) {
			t.Fatalf("known failure %q is not a server scenario of the suite: %v", name, scenarios)
		}
	}

	upstream := os.Getenv("MCP_GUARD_CONFORMANCE_URL")
	pinned := upstream == ""
	if pinned {
		upstream = conformanceServer(t)
	} else {
		t.Logf("server under test: %s (MCP_GUARD_CONFORMANCE_URL)", upstream)
	}
	direct := runConformance(t, suite, upstream, "direct")
	for _, s := range scenarios {
		if _, ok := direct[s]; !ok {
			t.Fatalf("the suite gave no result for scenario %s against the server directly", s)
		}
	}

	e := newEnv(t)
	cfg := e.config(fmt.Sprintf("[[server]]\nname = \"conf\"\nurl = %q\nallow_sampling = true\nallow_elicitation = true\n", upstream),
		// The suite's own test server (by hand) never answers test_reconnection
		// once it has closed the stream, even to its own SDK's client: its call
		// then ends at call_timeout, not after the default 2 minutes.
		"[limits]\ncall_timeout = \"30s\"\n",
		allowAll,
		"[[rule]]\nserver = \"conf\"\nprompt = \"*\"\naction = \"allow\"\n",
		"[[rule]]\nserver = \"conf\"\nresource = \"*\"\naction = \"allow\"\n")
	endpoint, _ := e.httpServe(cfg, "--http", "127.0.0.1:0")
	guarded := runConformance(t, suite, mapNames(t, "conf", endpoint), "through mcp-guard")

	var passedDirect, passedGuard []string
	for _, s := range scenarios {
		d, g := direct[s], guarded[s]
		if !d.passed() {
			if pinned {
				// go-sdk's server passes every scenario of the pinned suite:
				// one it fails says nothing about mcp-guard, so the run does not count.
				t.Errorf("%s fails against go-sdk's everything-server directly: %s", s, d)
			} else {
				t.Logf("%s fails against the server directly, not compared: %s", s, d)
			}
			continue
		}
		passedDirect = append(passedDirect, s)
		for _, id := range d.succeeded() {
			if !slices.Contains(g.succeeded(), id) {
				t.Logf("%s: check %s succeeds directly, not through mcp-guard: %s", s, id, g.check(id))
			}
		}
		why, known := conformanceKnownFailures[s]
		switch {
		case g.passed():
			passedGuard = append(passedGuard, s)
			if known {
				t.Logf("%s passed through mcp-guard this time though listed as a known failure (%s): remove it once it passes every time", s, why)
			}
		case known:
			t.Logf("%s fails through mcp-guard, a known failure (%s): %s", s, why, g)
		default:
			t.Errorf("%s passes against the server directly but fails through mcp-guard: %s", s, g)
		}
	}
	t.Logf("passed directly: %d of %d scenarios; through mcp-guard: %d of those", len(passedDirect), len(scenarios), len(passedGuard))
}

// conformanceServer builds go-sdk's conformance everything-server (from the
// go-sdk module the project requires), starts it on a free port and returns
// its endpoint. It serves stateful streamable HTTP: stateless, it cannot
// send the sampling and elicitation requests three scenarios need.
func conformanceServer(t *testing.T) string {
	t.Helper()
	binaries(t)
	bin := filepath.Join(t.TempDir(), "everything-server")
	build := exec.Command("go", "build", "-o", bin, "github.com/modelcontextprotocol/go-sdk/conformance/everything-server")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build go-sdk's conformance everything-server: %v\n%s", err, out)
	}
	port := freePort(t)
	cmd := exec.Command(bin, "-http", fmt.Sprintf("127.0.0.1:%d", port), "-stateless=false")
	out := &lockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("everything-server output:\n%s", out)
		}
	})
	waitListening(t, port)
	return fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
}

// conformanceScenarios lists the suite's server scenarios, pending ones
// included.
func conformanceScenarios(t *testing.T, suite string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", suite, "list", "--server")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("conformance list --server: %v\n%s", err, out)
	}
	var names []string
	for _, m := range regexp.MustCompile(`(?m)^\s+- (\S+) \[`).FindAllStringSubmatch(string(out), -1) {
		names = append(names, m[1])
	}
	if len(names) == 0 {
		t.Fatalf("conformance list --server listed no scenarios:\n%s", out)
	}
	return names
}

// scenarioResult is what the suite recorded for one scenario: its checks
// (checks.json).
type scenarioResult struct {
	Checks []struct {
		ID           string `json:"id"`
		Status       string `json:"status"`
		ErrorMessage string `json:"errorMessage"`
	}
}

// passed is the suite's own verdict: no check failed.
func (r scenarioResult) passed() bool {
	if len(r.Checks) == 0 {
		return false
	}
	for _, c := range r.Checks {
		if c.Status == "FAILURE" || c.Status == "ERROR" {
			return false
		}
	}
	return true
}

func (r scenarioResult) succeeded() []string {
	var ids []string
	for _, c := range r.Checks {
		if c.Status == "SUCCESS" {
			ids = append(ids, c.ID)
		}
	}
	return ids
}

func (r scenarioResult) check(id string) string {
	for _, c := range r.Checks {
		if c.ID == id {
			return c.Status + " " + c.ErrorMessage
		}
	}
	return "no such check"
}

func (r scenarioResult) String() string {
	if len(r.Checks) == 0 {
		return "no checks recorded"
	}
	var parts []string
	for _, c := range r.Checks {
		if c.Status == "FAILURE" || c.Status == "ERROR" {
			parts = append(parts, fmt.Sprintf("%s %s: %s", c.ID, c.Status, c.ErrorMessage))
		}
	}
	if len(parts) == 0 {
		return "passed"
	}
	return strings.Join(parts, "; ")
}

// runConformance runs every server scenario of the suite (pending ones
// included) against endpoint and returns each scenario's result.
func runConformance(t *testing.T, suite, endpoint, what string) map[string]scenarioResult {
	t.Helper()
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", suite, "server", "--suite", "all", "--url", endpoint, "-o", dir)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	cmd.Dir = dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("the conformance suite %s did not finish: %v\n%s", what, ctx.Err(), out)
	}
	// The suite exits 1 when a scenario fails: its results say which.
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		t.Fatalf("run the conformance suite %s: %v", what, err)
	}
	if sum := strings.Index(string(out), "=== SUMMARY ==="); sum >= 0 {
		t.Logf("conformance suite %s:\n%s", what, out[sum:])
	}
	return conformanceResults(t, dir, "server-", string(out))
}

// conformanceResults reads the results the suite wrote under dir, one
// folder per scenario named prefix, the scenario, a time stamp.
func conformanceResults(t *testing.T, dir, prefix, out string) map[string]scenarioResult {
	t.Helper()
	results := map[string]scenarioResult{}
	dirName := regexp.MustCompile(`^` + regexp.QuoteMeta(prefix) + `(.+)-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d+Z$`)
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, ent := range ents {
		m := dirName.FindStringSubmatch(ent.Name())
		if m == nil || !ent.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, ent.Name(), "checks.json"))
		if err != nil {
			t.Fatalf("conformance result %s: %v", ent.Name(), err)
		}
		var r scenarioResult
		if err := json.Unmarshal(b, &r.Checks); err != nil {
			t.Fatalf("conformance result %s: %v", ent.Name(), err)
		}
		results[m[1]] = r
	}
	if len(results) == 0 {
		t.Fatalf("the conformance suite recorded no results:\n%s", out)
	}
	return results
}
