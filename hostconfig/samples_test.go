package hostconfig

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// sample is one file of testdata/hosts and the host file it stands for.
type sample struct {
	file    string
	host    string
	base    string // the host file's name, to pick its layout
	servers []string
}

var samples = []sample{
	{"claude-code.claude.json", "claude-code", ".claude.json", []string{"notes", "github", "sentry"}},
	{"claude-code.mcp.json", "claude-code", ".mcp.json", []string{"airtable", "api-server"}},
	{"cursor.mcp.json", "cursor", "mcp.json", []string{"server-name", "remote", "python-tool"}},
	{"vscode.mcp.json", "vscode", "mcp.json", []string{"Perplexity", "github"}},
	{"vscode.settings.json", "vscode", "settings.json", []string{"fetch"}},
	{"windsurf.mcp_config.json", "windsurf", "mcp_config.json", []string{"github", "figma"}},
	{"gemini.settings.json", "gemini-cli", "settings.json", []string{"pythonTools", "httpServer"}},
	{"zed.settings.json", "zed", "settings.json", []string{"local-mcp-server", "legacy", "remote-mcp-server"}},
	{"codex.config.toml", "codex", "config.toml", []string{"context7", "figma", "docs"}},
}

func testLookup(dir string) Lookup {
	env := map[string]string{"HOME": "/home/me"}
	return Lookup{GOOS: "linux", Env: func(k string) (string, bool) { v, ok := env[k]; return v, ok }, Dir: dir}
}

func loadSample(t *testing.T, s sample) *Doc {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("../testdata/hosts", s.file))
	if err != nil {
		t.Fatal(err)
	}
	f := Find(s.host).FileAt(testLookup("/home/me/work/app"), "/x/"+s.base)
	d, err := Parse(f, raw)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

var wrapOpts = func(guard []string) WrapOptions {
	g := map[string]bool{}
	for _, n := range guard {
		g[n] = true
	}
	return WrapOptions{Bin: "/opt/mcp-guard/bin/mcp-guard", Config: "/home/me/.config/mcp-guard/config.toml", Guard: g}
}

// Each sample: its servers are read in file order; wrapping every one
// leaves no secret and no direct start in the file, changes nothing outside
// the entries, parses again, and wrapping that changes nothing; putting the
// entries back gives the original byte for byte.
func TestSamples_RoundTrip(t *testing.T) {
	for _, s := range samples {
		t.Run(s.file, func(t *testing.T) {
			d := loadSample(t, s)
			var names []string
			for _, e := range d.Entries {
				names = append(names, e.Name)
			}
			if !slices.Equal(names, s.servers) {
				t.Fatalf("servers %v, want %v", names, s.servers)
			}
			o := wrapOpts(s.servers)
			rw := d.Wrap(o)
			for _, sk := range rw.Skipped {
				t.Errorf("skipped %s: %s", sk.Name, sk.Reason)
			}
			for _, secret := range []string{"s3cret", "ghp_"} {
				if bytes.Contains(rw.Bytes, []byte(secret)) {
					t.Errorf("%q stayed in the wrapped file:\n%s", secret, rw.Bytes)
				}
			}
			w, err := Parse(d.File, rw.Bytes)
			if err != nil {
				t.Fatalf("the wrapped file does not parse: %v\n%s", err, rw.Bytes)
			}
			for _, e := range w.Entries {
				if !startsGuard(e, o.Bin) || !slices.Equal(e.Args, serveArgs(o, e.Name)) || e.URL != "" || e.Cwd != "" || len(e.Headers) > 0 {
					t.Errorf("%s wrapped as %+v", e.Name, e)
				}
				for k, v := range e.Env {
					if !IsReference(v) {
						t.Errorf("%s: env %s=%q stayed", e.Name, k, v)
					}
				}
			}
			if again := w.Wrap(o); !bytes.Equal(again.Bytes, rw.Bytes) || len(again.Guarded) != 0 {
				t.Errorf("wrapping again changed the file:\n%s", again.Bytes)
			}
			if d.File.Format == TOML {
				if !bytes.Contains(rw.Bytes, []byte("[mcp_servers.docs.tools.search]\napproval_mode = \"approve\"\n")) || !bytes.Contains(rw.Bytes, []byte("[mcp_servers.fake]\nnot a table")) {
					t.Errorf("a sub-table or a multi-line string was changed:\n%s", rw.Bytes)
				}
				return // unwrap restores the backup
			}
			u := w.Unwrap(rw.Changes, false)
			if !bytes.Equal(u.Bytes, d.Raw) || len(u.Left) != 0 {
				t.Errorf("unwrap gave (left %v)\n%s\nwant\n%s", u.Left, u.Bytes, d.Raw)
			}
		})
	}
}

// A file the host rewrites: an edit the host made since wrap (a key added,
// the file re-indented) is kept by unwrap; an entry changed since is left
// as it is, and named.
func TestUnwrap_KeepsTheHostsChanges(t *testing.T) {
	s := samples[0]
	d := loadSample(t, s)
	rw := d.Wrap(wrapOpts([]string{"github", "notes", "sentry"}))
	// The host re-writes the file: another indent, a new key, and the
	// user points sentry somewhere else.
	edited := strings.Replace(string(rw.Bytes), `"numStartups": 42`, `"numStartups": 43, "tipsHistory": {"x": 1}`, 1)
	w, err := Parse(d.File, []byte(edited))
	if err != nil {
		t.Fatal(err)
	}
	u := w.Unwrap(rw.Changes, false)
	want := strings.Replace(string(d.Raw), `"numStartups": 42`, `"numStartups": 43, "tipsHistory": {"x": 1}`, 1)
	if string(u.Bytes) != want || len(u.Restored) != 3 {
		t.Fatalf("unwrap gave %v\n%s", u.Restored, u.Bytes)
	}

	i := strings.Index(edited, `"--server", "sentry"]`)
	changed := edited[:i] + `"--server", "sentry", "--x"]` + edited[i+len(`"--server", "sentry"]`):]
	w, err = Parse(d.File, []byte(changed))
	if err != nil {
		t.Fatal(err)
	}
	u = w.Unwrap(rw.Changes, false)
	if len(u.Left) != 1 || !strings.HasPrefix(u.Left[0], "mcpServers.sentry (it was changed") || len(u.Restored) != 2 {
		t.Fatalf("restored %v, left %v", u.Restored, u.Left)
	}
	if u = w.Unwrap(rw.Changes, true); len(u.Restored) != 3 {
		t.Fatalf("--force restored %v", u.Restored)
	}

	// The host re-serializes the whole file: the entries are still found
	// by what they hold, and put back.
	var compacted bytes.Buffer
	if err := json.Compact(&compacted, rw.Bytes); err != nil {
		t.Fatal(err)
	}
	w, err = Parse(d.File, compacted.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	u = w.Unwrap(rw.Changes, false)
	back, err := Parse(d.File, u.Bytes)
	if err != nil || len(u.Restored) != 3 || len(back.Entries) != 3 || !sameJSON(u.Bytes, d.Raw) {
		t.Fatalf("restored %v (%v):\n%s", u.Restored, err, u.Bytes)
	}
}

// Every host's files, where its docs say they are.
func TestFiles_Paths(t *testing.T) {
	env := map[string]string{"HOME": "/h", "XDG_CONFIG_HOME": "/xdg", "APPDATA": `C:\Users\me\AppData\Roaming`, "USERPROFILE": `C:\Users\me`, "CODEX_HOME": ""}
	get := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	want := map[string]map[string][]string{
		"linux": {
			"claude-desktop": {"/xdg/Claude/claude_desktop_config.json"},
			"claude-code":    {"/h/.claude.json", "/p/.mcp.json"},
			"cursor":         {"/h/.cursor/mcp.json", "/p/.cursor/mcp.json"},
			"vscode":         {"/p/.vscode/mcp.json", "/xdg/Code/User/mcp.json", "/xdg/Code/User/settings.json"},
			"windsurf":       {"/h/.codeium/windsurf/mcp_config.json"},
			"gemini-cli":     {"/h/.gemini/settings.json", "/p/.gemini/settings.json"},
			"zed":            {"/xdg/zed/settings.json"},
			"codex":          {"/h/.codex/config.toml"},
		},
		"darwin": {
			"claude-desktop": {"/h/Library/Application Support/Claude/claude_desktop_config.json"},
			"vscode":         {"/p/.vscode/mcp.json", "/h/Library/Application Support/Code/User/mcp.json", "/h/Library/Application Support/Code/User/settings.json"},
			"zed":            {"/h/.config/zed/settings.json"},
		},
		"windows": {
			"claude-code": {`C:\Users\me\.claude.json`, `/p\.mcp.json`},
			"vscode":      {`/p\.vscode\mcp.json`, `C:\Users\me\AppData\Roaming\Code\User\mcp.json`, `C:\Users\me\AppData\Roaming\Code\User\settings.json`},
			"zed":         {`C:\Users\me\AppData\Roaming\Zed\settings.json`},
			"windsurf":    {`C:\Users\me\.codeium\windsurf\mcp_config.json`},
		},
	}
	for goos, hs := range want {
		for name, paths := range hs {
			var got []string
			for _, f := range Find(name).Files(Lookup{GOOS: goos, Env: get, Dir: "/p"}) {
				got = append(got, f.Path)
			}
			if !slices.Equal(got, paths) {
				t.Errorf("%s %s: %q, want %q", goos, name, got, paths)
			}
		}
	}
	env["CODEX_HOME"] = "/c"
	env["XDG_CONFIG_HOME"] = "relative"
	if f := codex.Files(Lookup{GOOS: "linux", Env: get})[0]; f.Path != "/c/config.toml" {
		t.Errorf("codex with CODEX_HOME: %s", f.Path)
	}
	env["CLAUDE_CONFIG_DIR"] = "/cc"
	if f := claudeCode.Files(Lookup{GOOS: "linux", Env: get})[0]; f.Path != "/cc/.claude.json" {
		t.Errorf("claude-code with CLAUDE_CONFIG_DIR: %s", f.Path)
	}
	if f := zed.Files(Lookup{GOOS: "linux", Env: get})[0]; f.Path != "/h/.config/zed/settings.json" {
		t.Errorf("zed with a relative XDG_CONFIG_HOME: %s", f.Path)
	}
}

// Files the host cannot read are refused with where: comments in strict
// JSON, a name twice, data after the value; JSONC takes comments and
// trailing commas.
func TestParse_Refuses(t *testing.T) {
	for _, c := range []struct {
		jsonc bool
		src   string
		want  string
	}{
		{false, "{\"a\": 1 // c\n}", "line 1 col 9: want , or }"},
		{false, `{"mcpServers": {"a": {}, "a": {}}}`, `line 1 col 26: duplicate object member name "a"`},
		{false, `{"a": 1,}`, "a comma before }"},
		{true, "{} x", "unexpected data after the top-level value"},
		{true, "{\"a\": \"\xff\"}", "invalid UTF-8"},
		{true, "{/* open", "comment is not closed"},
	} {
		_, err := parseJSON([]byte(c.src), c.jsonc)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.src, err, c.want)
		}
	}
	if _, err := parseJSON([]byte("// c\n{\"a\": [1, 2,], /* c */ \"b\": {},}\n"), true); err != nil {
		t.Errorf("JSONC refused: %v", err)
	}
}
