package main

import (
	"context"
	"encoding/base64"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const filesystemRootsRules = `
[[rule]]
server = "fs"
tool = "list_allowed_directories"
class = "read"
action = "allow"

[[rule]]
server = "fs"
tool = "read_text_file"
class = "read"
action = "allow"
`

// server-filesystem replaces its allowed directories with whatever roots its
// client declares. Through mcp-guard it never learns the host's roots: by
// default it keeps the directory on its command line, and with roots in its
// [[server]] it gets exactly those.
func TestClientRequests_FilesystemRootsCannotWiden(t *testing.T) {
	t.Parallel()
	hostDir := t.TempDir() // the host declares this root; it holds a secret
	writeFile(t, filepath.Join(hostDir, "secret.txt"), "host secret")
	var sampled, elicited atomic.Int32
	for _, c := range []struct {
		name, roots string
	}{{"default", ""}, {"configured", "roots = [%q]\n"}} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			cmdDir, rootDir := t.TempDir(), t.TempDir()
			server := npmServer(t, "fs", filesystemJS, cmdDir)
			want := cmdDir
			if c.roots != "" {
				server += fmt.Sprintf(c.roots, rootDir)
				want = rootDir
			}
			h := e.connectWithHandlers(e.config(server, filesystemRootsRules), &sampled, &elicited, hostDir)
			var dirs string
			eventually(t, "the server's allowed directories to settle on "+want, func() bool {
				res, err := h.call(t, "fs__list_allowed_directories", map[string]any{})
				dirs = resultText(res)
				return err == nil && strings.Contains(dirs, want)
			})
			if strings.Contains(dirs, hostDir) {
				t.Fatalf("the host's root reached server-filesystem:\n%s", dirs)
			}
			res, err := h.call(t, "fs__read_text_file", map[string]any{"path": filepath.Join(hostDir, "secret.txt")})
			if err == nil && !res.IsError {
				t.Fatalf("read the host's secret through mcp-guard: %q", resultText(res))
			}
		})
	}
}

// completion/complete reaches the server that owns an exposed prompt, under
// its own prompt name; a prompt the host is not shown gets none.
func TestCompletion_ServerEverythingPrompt(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	h := e.connect(e.config(npmServer(t, "every", everythingJS, "stdio"), `
[[rule]]
server = "every"
prompt = "completable-prompt"
action = "allow"
`), "2025-11-25")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := h.Complete(ctx, &mcp.CompleteParams{
		Ref:      &mcp.CompleteReference{Type: "ref/prompt", Name: "every__completable-prompt"},
		Argument: mcp.CompleteParamsArgument{Name: "department", Value: "E"},
	})
	if err != nil || !slices.Contains(res.Completion.Values, "Engineering") {
		t.Fatalf("completion through mcp-guard: %v %+v", err, res)
	}
	if _, err := h.Complete(ctx, &mcp.CompleteParams{
		Ref:      &mcp.CompleteReference{Type: "ref/prompt", Name: "every__simple-prompt"},
		Argument: mcp.CompleteParamsArgument{Name: "x", Value: ""},
	}); err == nil {
		t.Fatalf("completion for a prompt no rule exposes succeeded")
	}
}

// T2: a completion's argument carrying a credential mcp-guard holds (here
// the server's own env value, base64'd) is refused and never reaches the
// server; the same completion without it does.
func TestSecrets_CompletionArgumentRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const token = "completion-Secret-4455667788"
	server := npmServer(t, "every", everythingJS, "stdio") + fmt.Sprintf("env = { EVERY_TOKEN = %q }\n", token)
	h := e.connect(e.config(server, `
[[rule]]
server = "every"
prompt = "completable-prompt"
action = "allow"
`), "2025-11-25")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	ref := &mcp.CompleteReference{Type: "ref/prompt", Name: "every__completable-prompt"}
	if res, err := h.Complete(ctx, &mcp.CompleteParams{Ref: ref, Argument: mcp.CompleteParamsArgument{Name: "department", Value: "E"}}); err != nil || !slices.Contains(res.Completion.Values, "Engineering") {
		t.Fatalf("a clean completion: %v %+v", err, res)
	}
	_, err := h.Complete(ctx, &mcp.CompleteParams{Ref: ref, Argument: mcp.CompleteParamsArgument{Name: "department", Value: base64.StdEncoding.EncodeToString([]byte(token))}})
	if err == nil || !strings.Contains(err.Error(), "carries a credential mcp-guard holds") || strings.Contains(err.Error(), "EVERY_TOKEN") {
		t.Fatalf("a completion carrying the server's token: %v", err)
	}
}
