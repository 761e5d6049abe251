package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/mcp-guard/mcp-guard/config"
	"github.com/mcp-guard/mcp-guard/gate"
	"github.com/mcp-guard/mcp-guard/internal/jsonl"
	"github.com/mcp-guard/mcp-guard/internal/safetext"
	"github.com/mcp-guard/mcp-guard/ledger"
	"github.com/mcp-guard/mcp-guard/pin"
)

// cmdTest runs decision tests of the operator's rules: each [[case]] of
// the test files (config.test.toml beside the config by default) is
// decided as explain decides it (serve's view and pipeline, dry, in a
// fresh session holding the case's labels) and compared with what it
// expects. Pins come from the ledger, or for the servers --schemas names,
// from that file. Exit 1 when a case fails.
func cmdTest(args []string, c cli) error {
	fs := newFlagSet("test")
	cfgPath := fs.String("config", "", "config file")
	schemas := fs.String("schemas", "", "a JSON file of tool definitions to decide by instead of the ledger's pins: {\"SERVER\": {\"tools\": [...]}, ...}")
	asJSON := fs.Bool("json", false, "print one JSON object per case, then one per file (fields: README)")
	var files, rest []string
	for _, a := range args { // files may come before or after flags
		if strings.HasPrefix(a, "-") || (len(rest) > 0 && testTakesValue(rest[len(rest)-1])) {
			rest = append(rest, a)
		} else {
			files = append(files, a)
		}
	}
	if err := parseFlags(fs, rest, c); err != nil {
		return err
	}
	p, err := configPath(*cfgPath, c.env)
	if err != nil {
		return usageErr("test: %v", err)
	}
	cfg, err := config.Load(p, c.env)
	if err != nil {
		return err
	}
	if len(files) == 0 {
		files = []string{testFilePath(cfg.Path())}
	}
	suites := make([][]config.Case, len(files))
	for i, f := range files {
		if suites[i], err = config.LoadCases(f, cfg); err != nil {
			return err
		}
	}
	ctx := c.ctx
	led, done, err := openLedgerForTest(ctx, cfg)
	if err != nil {
		return err
	}
	defer done()
	pins, err := led.Pins(ctx, "")
	if err != nil {
		return err
	}
	if *schemas != "" {
		if pins, err = schemaPins(*schemas, cfg, pins); err != nil {
			return &exitError{code: 2, err: err}
		}
	}
	dry := newDryRun(cfg, led, pins, c.env)
	lim := cfg.LimitsInForce()
	jw := jsonl.NewWriter(c.stdout)
	failed := 0
	for i, cases := range suites {
		file := files[i]
		n := 0
		for _, k := range cases {
			held := make([]ledger.Label, len(k.Labels))
			for j, lb := range k.Labels {
				held[j] = ledger.Label{Label: lb}
			}
			r := judgeCase(k, dry.decide(ctx, dry.g.NewSession(lim, nil), k.Server, k.Tool, k.Args, "", &held))
			if !r.Pass {
				n++
			}
			r.File = file
			if *asJSON {
				if err := jw.Write(r); err != nil {
					return err
				}
			} else if !r.Pass {
				printFailedCase(c, r)
			}
		}
		failed += n
		if *asJSON {
			if err := jw.Write(testFileJSON{Type: "file", File: file, Cases: len(cases), Failed: n}); err != nil {
				return err
			}
		} else if n == 0 {
			fmt.Fprintf(c.stdout, "ok   %s: %d cases passed\n", file, len(cases))
		} else {
			fmt.Fprintf(c.stdout, "FAIL %s: %d of %d cases failed\n", file, n, len(cases))
		}
	}
	if failed > 0 {
		return &exitError{code: 1, err: fmt.Errorf("test: %d cases failed", failed)}
	}
	return nil
}

// testFilePath is the default test file for the config at path: beside
// it, named for it (config.toml: config.test.toml).
func testFilePath(path string) string {
	return strings.TrimSuffix(path, filepath.Ext(path)) + ".test.toml"
}

func testTakesValue(a string) bool {
	switch strings.TrimLeft(a, "-") {
	case "config", "schemas":
		return true
	}
	return false
}

// caseJSON is one case's result, as --json prints it and as the text
// report is made from.
type caseJSON struct {
	Type       string          `json:"type"` // "case"
	File       string          `json:"file"`
	Line       int             `json:"line"`
	Name       string          `json:"name"`
	Call       string          `json:"call"`
	Args       json.RawMessage `json:"args"` // null when they are not JSON
	ArgsText   string          `json:"-"`
	Labels     []string        `json:"labels"`
	Expect     string          `json:"expect"`
	ExpectRule int             `json:"expect_rule"` // 0: any
	Got        string          `json:"got"`         // allow, ask, deny, invalid or hidden
	Decision   string          `json:"decision"`    // what serve would record, e.g. unknown_tool or refuse
	Rule       int             `json:"rule"`
	Stage      string          `json:"stage"` // the pipeline stage that decided; "exposure" for hidden
	Reason     string          `json:"reason"`
	Pass       bool            `json:"pass"`
}

type testFileJSON struct {
	Type   string `json:"type"` // "file"
	File   string `json:"file"`
	Cases  int    `json:"cases"`
	Failed int    `json:"failed"`
}

// judgeCase compares what serve would do with what k expects. A refusal
// by a rule, a flow, a limit or the secrets check is "deny"; a call the
// host is not shown (or that is withdrawn) is "hidden".
func judgeCase(k config.Case, dc dryCall) caseJSON {
	r := caseJSON{Type: "case", Line: k.Line, Name: k.Name, Call: k.Server + "/" + k.Tool, ArgsText: string(k.Args),
		Labels: k.Labels, Expect: k.Expect, ExpectRule: k.Rule, Decision: dc.start.Decision, Rule: dc.res.Decision.Rule,
		Reason: dc.start.Reason}
	if r.Labels == nil {
		r.Labels = []string{}
	}
	if json.Valid(k.Args) {
		r.Args = k.Args
	}
	switch {
	case dc.res.Status == gate.Withdrawn:
		r.Got, r.Stage, r.Rule = "hidden", "exposure", 0
		if dc.withheld != "" {
			r.Reason = dc.withheld
		}
	default:
		r.Stage = string(dc.res.Decision.Stage)
		switch dc.res.Decision.Outcome {
		case gate.Allow:
			r.Got = "allow"
		case gate.Ask:
			r.Got = "ask"
		case gate.Invalid:
			r.Got = "invalid"
		default:
			r.Got = "deny"
		}
	}
	r.Pass = r.Got == k.Expect && (k.Rule == 0 || k.Rule == r.Rule)
	return r
}

func printFailedCase(c cli, r caseJSON) {
	name := ""
	if r.Name != "" {
		name = " (" + safetext.Show(r.Name, 100) + ")"
	}
	want, got := r.Expect, r.Got
	if r.ExpectRule != 0 {
		want = fmt.Sprintf("%s by rule %d", want, r.ExpectRule)
		if r.Rule != 0 {
			got = fmt.Sprintf("%s by rule %d", got, r.Rule)
		}
	}
	fmt.Fprintf(c.stdout, "FAIL %s:%d%s %s %s: want %s, got %s\n", r.File, r.Line, name,
		safetext.Show(r.Call, 200), safetext.Show(r.ArgsText, 300), want, got)
	why := r.Decision
	if r.Reason != "" {
		why += " (" + safetext.Show(r.Reason, 400) + ")"
	}
	if r.Rule != 0 && r.Stage == string(gate.StageRules) {
		fmt.Fprintf(c.stdout, "     decided by %s: rule %d, %s\n", r.Stage, r.Rule, why)
	} else {
		fmt.Fprintf(c.stdout, "     decided by %s: %s\n", r.Stage, why)
	}
}

// openLedgerForTest opens the config's ledger when it exists; else a
// ledger of its own in a temporary directory, removed by done, so that
// test never creates the operator's.
func openLedgerForTest(ctx context.Context, cfg *config.Config) (*ledger.Ledger, func(), error) {
	path := cfg.Ledger.Path
	tmp := ""
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		if tmp, err = os.MkdirTemp("", "mcp-guard-test-"); err != nil {
			return nil, nil, fmt.Errorf("test: %w", err)
		}
		path = filepath.Join(tmp, "ledger.db")
	}
	led, err := ledger.Open(ctx, path, ledger.Options{})
	if err != nil {
		if tmp != "" {
			os.RemoveAll(tmp)
		}
		return nil, nil, err
	}
	return led, func() {
		led.Close()
		if tmp != "" {
			os.RemoveAll(tmp)
		}
	}, nil
}

// schemaPins reads --schemas: for each server it names (an object of
// server names, each a tools/list result, with the server's
// "instructions" beside "tools" when it has any, or an array of tools),
// its tools and instructions as pins in place of the ledger's.
func schemaPins(path string, cfg *config.Config, pins []ledger.Pin) ([]ledger.Pin, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("test: --schemas: %w", err)
	}
	var byServer map[string]json.RawMessage
	if err := json.Unmarshal(b, &byServer); err != nil {
		return nil, fmt.Errorf("test: --schemas %s: want a JSON object of server names, each a tools/list result or an array of tools: %w", path, err)
	}
	known := map[string]bool{}
	for _, s := range cfg.Servers {
		known[s.Name] = true
	}
	var out []ledger.Pin
	for name, raw := range byServer {
		if !known[name] {
			return nil, fmt.Errorf("test: --schemas %s: the config has no server %q", path, safetext.Show(name, 100))
		}
		if t := strings.TrimSpace(string(raw)); strings.HasPrefix(t, "[") {
			raw = json.RawMessage(`{"tools":` + t + `}`)
		}
		page, err := pin.SplitPage(raw)
		if err != nil {
			return nil, fmt.Errorf("test: --schemas %s: server %s: %w", path, safetext.Show(name, 100), err)
		}
		var instr struct {
			Instructions *string `json:"instructions"`
		}
		json.Unmarshal(raw, &instr) // SplitPage has read it
		var ir []byte               // what serve pins for a server without instructions
		if instr.Instructions != nil {
			ir, _ = json.Marshal(*instr.Instructions)
		}
		sum := sha256.Sum256(ir)
		out = append(out, ledger.Pin{Server: name, Tool: "", State: ledger.PinPinned, Digest: hex.EncodeToString(sum[:]), Raw: ir})
		for _, t := range page.Tools {
			out = append(out, ledger.Pin{Server: name, Tool: t.Name, State: ledger.PinPinned, Digest: t.Digest(), Raw: t.Raw})
		}
	}
	for _, p := range pins {
		if _, replaced := byServer[p.Server]; !replaced {
			out = append(out, p)
		}
	}
	return out, nil
}
