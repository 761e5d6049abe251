package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// npmServer is a [[server]] block running an npm reference server from
// testdata/peers with node.
func npmServer(t *testing.T, name, script string, args ...string) string {
	t.Helper()
	argv := []string{"node", peerPath(t, script)}
	argv = append(argv, args...)
	quoted := make([]string, len(argv))
	for i, a := range argv {
		quoted[i] = fmt.Sprintf("%q", a)
	}
	return fmt.Sprintf("[[server]]\nname = %q\ncommand = [%s]\npass_env = [\"PATH\", \"HOME\"]\n", name, strings.Join(quoted, ", "))
}

const everythingJS = "@modelcontextprotocol/server-everything/dist/index.js"
const filesystemJS = "@modelcontextprotocol/server-filesystem/dist/index.js"

// The real server-everything behind mcp-guard: echo and get-sum forwarded, a
// long operation's progress relayed, unclassified tools hidden.
func TestPeers_ServerEverything(t *testing.T) {
	for _, version := range []string{"2025-06-18", "2025-11-25"} {
		t.Run(version, func(t *testing.T) {
			e := newEnv(t)
			cfg := e.config(npmServer(t, "every", everythingJS, "stdio"), `
[[rule]]
server = "every"
tool = "echo"
class = "read"
action = "allow"

[[rule]]
server = "every"
tool = "get-sum"
class = "read"
action = "allow"

[[rule]]
server = "every"
tool = "trigger-long-running-operation"
class = "read"
action = "allow"

[[rule]]
server = "every"
tool = "get-env"
class = "read"
action = "deny"
reason = "the environment is not for the model"
`)
			h := e.connect(cfg, version)
			got := h.toolNames(t)
			slices.Sort(got)
			want := []string{"every__echo", "every__get-env", "every__get-sum", "every__trigger-long-running-operation"}
			if !slices.Equal(got, want) {
				t.Fatalf("host sees %v, want %v", got, want)
			}

			res, err := h.call(t, "every__echo", map[string]any{"message": "hello <guard>"})
			if err != nil || res.IsError || resultText(res) != "Echo: hello <guard>" {
				t.Fatalf("echo: %v %q", err, resultText(res))
			}
			res, err = h.call(t, "every__get-sum", map[string]any{"a": 2, "b": 3})
			if err != nil || !strings.Contains(resultText(res), "5") {
				t.Fatalf("get-sum: %v %q", err, resultText(res))
			}
			res, err = h.call(t, "every__get-env", map[string]any{})
			if err != nil || !res.IsError || !strings.Contains(resultText(res), "the environment is not for the model") {
				t.Fatalf("get-env should be denied: %v %q", err, resultText(res))
			}
			if strings.Contains(resultText(res), "MCP_GUARD_TEST_SECRET") {
				t.Fatal("secret leaked")
			}

			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			params := &mcp.CallToolParams{Name: "every__trigger-long-running-operation", Arguments: map[string]any{"duration": 1, "steps": 4}}
			params.SetProgressToken("lro-1")
			res, err = h.CallTool(ctx, params)
			if err != nil || res.IsError {
				t.Fatalf("long operation: %v %v", err, res)
			}
			eventually(t, "4 progress notifications", func() bool { return len(h.progressSeen()) >= 4 })
			for _, p := range h.progressSeen() {
				if p.ProgressToken != "lro-1" {
					t.Fatalf("progress with token %v, want the host's lro-1", p.ProgressToken)
				}
			}
		})
	}
}

// The real server-filesystem behind mcp-guard: reads allowed, writes denied
// before they reach the server (the file is not created).
func TestPeers_ServerFilesystem(t *testing.T) {
	e := newEnv(t)
	root := filepath.Join(e.dir, "root")
	os.MkdirAll(root, 0o700)
	os.WriteFile(filepath.Join(root, "hello.txt"), []byte("hello from disk\n"), 0o600)
	cfg := e.config(npmServer(t, "fs", filesystemJS, root), `
[[rule]]
server = "fs"
tool = "read_*"
class = "read"
action = "allow"

[[rule]]
server = "fs"
tool = "list_directory"
class = "read"
action = "allow"

[[rule]]
server = "fs"
tool = "write_file"
class = "write"
action = "deny"
reason = "writes are not allowed from chat"
`)
	h := e.connect(cfg, "2025-11-25")
	names := h.toolNames(t)
	for _, n := range []string{"fs__read_text_file", "fs__write_file", "fs__list_directory"} {
		if !slices.Contains(names, n) {
			t.Fatalf("host does not see %s: %v", n, names)
		}
	}
	if slices.Contains(names, "fs__move_file") {
		t.Fatalf("unclassified move_file is exposed: %v", names)
	}
	res, err := h.call(t, "fs__read_text_file", map[string]any{"path": filepath.Join(root, "hello.txt")})
	if err != nil || res.IsError || !strings.Contains(resultText(res), "hello from disk") {
		t.Fatalf("read_text_file: %v %q", err, resultText(res))
	}
	target := filepath.Join(root, "new.txt")
	res, err = h.call(t, "fs__write_file", map[string]any{"path": target, "content": "pwned"})
	if err != nil || !res.IsError || !strings.Contains(resultText(res), "writes are not allowed from chat") {
		t.Fatalf("write_file should be denied: %v %q", err, resultText(res))
	}
	if _, err := os.Stat(target); !os.IsNotExist(err) {
		t.Fatalf("denied write created %s", target)
	}
	if _, err := h.call(t, "fs__move_file", map[string]any{"source": "a", "destination": "b"}); err == nil {
		t.Fatal("call to unclassified move_file was not refused")
	}
}

// The npm inspector CLI as the host: it starts mcp-guard serve itself and
// sees the guarded server-everything's tools, namespaced; an allowed call
// answers, a denied one comes back as an error result.
func TestPeers_InspectorCLIAsTheHost(t *testing.T) {
	e := newEnv(t)
	cli := peerPath(t, ".bin/mcp-inspector-cli")
	cfg := e.config(npmServer(t, "every", everythingJS, "stdio"), `
[[rule]]
server = "every"
tool = "echo"
class = "read"
action = "allow"

[[rule]]
server = "every"
tool = "get-sum"
class = "read"
action = "deny"
reason = "no sums"
`)
	// inspector-cli 1.0.3 looks for ../package.json relative to its working directory.
	work := filepath.Join(e.dir, "inspector", "run")
	os.MkdirAll(work, 0o700)
	os.WriteFile(filepath.Join(e.dir, "inspector", "package.json"), []byte("{}"), 0o600)
	run := func(args ...string) string {
		t.Helper()
		argv := append([]string{"--cli", "-e", "MCP_GUARD_CONFIG=" + cfg, "-e", "HOME=" + e.dir, bins.guard, "serve"}, args...)
		cmd := exec.Command(cli, argv...)
		cmd.Dir = work
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + e.dir}
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("inspector-cli %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	if out := run("--method", "tools/list"); !strings.Contains(out, `"name": "every__echo"`) || !strings.Contains(out, `"name": "every__get-sum"`) || strings.Contains(out, "every__get-env") {
		t.Fatalf("tools/list through the inspector:\n%s", out)
	}
	if out := run("--method", "tools/call", "--tool-name", "every__echo", "--tool-arg", "message=via inspector"); !strings.Contains(out, "Echo: via inspector") {
		t.Fatalf("echo through the inspector:\n%s", out)
	}
	if out := run("--method", "tools/call", "--tool-name", "every__get-sum", "--tool-arg", "a=1", "b=2"); !strings.Contains(out, "denied by rule 2: no sums") || !strings.Contains(out, `"isError": true`) {
		t.Fatalf("denied call through the inspector:\n%s", out)
	}
}
