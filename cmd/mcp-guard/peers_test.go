package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
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
const memoryJS = "@modelcontextprotocol/server-memory/dist/index.js"

// The real server-everything behind mcp-guard: echo and get-sum forwarded, a
// long operation's progress relayed, unclassified tools hidden.
func TestPeers_ServerEverything(t *testing.T) {
	t.Parallel()
	for _, version := range []string{"2025-06-18", "2025-11-25", "2026-07-28"} {
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
			if got := h.InitializeResult().ProtocolVersion; got != version {
				t.Fatalf("negotiated protocol version %q, want %q", got, version)
			}
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
	t.Parallel()
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

// threeServers is mcp-guard fronting the three npm reference servers:
// server-everything, server-filesystem over root (holding hello.txt) and
// server-memory keeping its graph in memFile. Rule numbers matter: the
// denials name them.
type threeServers struct {
	cfg, root, memFile string
}

const threeServersRules = `
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
server = "fs"
tool = "read_text_file"
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
reason = "no writes from this host"

[[rule]]
server = "memory"
tool = "read_graph"
class = "read"
action = "allow"

[[rule]]
server = "memory"
tool = "create_entities"
class = "write"
action = "ask"

[[rule]]
server = "memory"
tool = "delete_entities"
class = "destructive"
action = "deny"
reason = "the graph is append-only here"
`

// The names the host must see: the classified tools, namespaced, and no other.
var threeServersTools = []string{
	"every__echo", "every__get-sum",
	"fs__list_directory", "fs__read_text_file", "fs__write_file",
	"memory__create_entities", "memory__delete_entities", "memory__read_graph",
}

func newThreeServers(t *testing.T, e *env) threeServers {
	t.Helper()
	s := threeServers{root: filepath.Join(e.dir, "root"), memFile: filepath.Join(e.dir, "memory.jsonl")}
	if err := os.MkdirAll(s.root, 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(s.root, "hello.txt"), "hello from disk\n")
	s.cfg = e.config("[limits]\napproval_wait = \"20s\"\n",
		npmServer(t, "every", everythingJS, "stdio"),
		npmServer(t, "fs", filesystemJS, s.root),
		npmServer(t, "memory", memoryJS)+fmt.Sprintf("env = { MEMORY_FILE_PATH = %q }\n", s.memFile),
		threeServersRules)
	return s
}

// The npm inspector CLI as the host of mcp-guard fronting the three npm
// servers, one method per run: the namespaced listing, an allowed call, a
// denied one as an error result, and an ask that waits in the background
// until the operator approves it from the CLI, then runs.
func TestPeers_InspectorCLIAsTheHost(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := newThreeServers(t, e)
	cli := peerPath(t, ".bin/mcp-inspector-cli")
	// inspector-cli 1.0.3 looks for ../package.json relative to its working directory.
	work := filepath.Join(e.dir, "inspector", "run")
	os.MkdirAll(work, 0o700)
	writeFile(t, filepath.Join(e.dir, "inspector", "package.json"), "{}")
	// command is one inspector run; its stdout is the method's result as JSON.
	command := func(args ...string) (cmd *exec.Cmd, stdout, stderr *lockedBuffer) {
		argv := []string{"--cli", "-e", "MCP_GUARD_CONFIG=" + s.cfg, "-e", "HOME=" + e.dir}
		for _, kv := range coverEnv() {
			argv = append(argv, "-e", kv)
		}
		argv = append(append(argv, bins.guard, "serve"), args...)
		cmd = exec.Command(cli, argv...)
		cmd.Dir = work
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + e.dir}
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		stdout, stderr = &lockedBuffer{}, &lockedBuffer{}
		cmd.Stdout, cmd.Stderr = stdout, stderr
		return cmd, stdout, stderr
	}
	run := func(args ...string) string {
		t.Helper()
		cmd, stdout, stderr := command(args...)
		if err := cmd.Run(); err != nil {
			t.Fatalf("inspector-cli %v: %v\n%s%s", args, err, stdout, stderr)
		}
		return stdout.String()
	}

	var listing struct{ Tools []struct{ Name string } }
	out := run("--method", "tools/list")
	if err := json.Unmarshal([]byte(out), &listing); err != nil {
		t.Fatalf("tools/list through the inspector: %v\n%s", err, out)
	}
	var names []string
	for _, tl := range listing.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	if !slices.Equal(names, threeServersTools) {
		t.Fatalf("the inspector sees %v, want exactly %v", names, threeServersTools)
	}
	if out := run("--method", "tools/call", "--tool-name", "every__echo", "--tool-arg", "message=via inspector"); !strings.Contains(out, "Echo: via inspector") || strings.Contains(out, `"isError": true`) {
		t.Fatalf("echo through the inspector:\n%s", out)
	}
	forbidden := filepath.Join(s.root, "new.txt")
	if out := run("--method", "tools/call", "--tool-name", "fs__write_file", "--tool-arg", "path="+forbidden, "content=pwned"); !strings.Contains(out, "denied by rule 5: no writes from this host") || !strings.Contains(out, `"isError": true`) {
		t.Fatalf("denied write through the inspector:\n%s", out)
	}
	if _, err := os.Stat(forbidden); !os.IsNotExist(err) {
		t.Fatalf("the denied write reached server-filesystem: %s exists (%v)", forbidden, err)
	}

	// The ask runs in the background; the operator approves it.
	ask, askOut, askErr := command("--method", "tools/call", "--tool-name", "memory__create_entities",
		"--tool-arg", `entities=[{"name":"inspected","entityType":"test","observations":["via inspector"]}]`)
	if err := ask.Start(); err != nil {
		t.Fatal(err)
	}
	asked := make(chan error, 1)
	go func() { asked <- ask.Wait() }()
	t.Cleanup(func() { syscall.Kill(-ask.Process.Pid, syscall.SIGKILL) })
	id, shown := e.pendingApproval(s.cfg)
	select {
	case err := <-asked:
		t.Fatalf("the held call ended before approval (%v):\n%s%s", err, askOut, askErr)
	default:
	}
	if b, _ := os.ReadFile(s.memFile); bytes.Contains(b, []byte("inspected")) {
		t.Fatalf("the held call reached server-memory before approval:\n%s", b)
	}
	if out, code := e.mcpGuard("approve", id, "--config", s.cfg, "--shown", shown); code != 0 {
		t.Fatalf("approve (exit %d): %s", code, out)
	}
	select {
	case err := <-asked:
		if out := askOut.String(); err != nil || !strings.Contains(out, `\"name\": \"inspected\"`) || strings.Contains(out, `"isError": true`) {
			t.Fatalf("the approved call through the inspector (%v):\n%s%s", err, out, askErr)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the approved call did not complete:\n%s%s", askOut, askErr)
	}
	if b, _ := os.ReadFile(s.memFile); !bytes.Contains(b, []byte(`"name":"inspected"`)) {
		t.Fatalf("server-memory's graph after the approved create:\n%s", b)
	}
	eventually(t, "the calls in the ledger", func() bool {
		out, code := e.mcpGuard("log", "--config", s.cfg)
		return code == 0 && strings.Contains(out, "fs/write_file deny refused rule=5") &&
			strings.Contains(out, "memory/create_entities ask done rule=7") && strings.Contains(out, "every/echo allow done rule=1")
	})
}
