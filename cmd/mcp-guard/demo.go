package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mcp-guard/mcp-guard/cmd/mcp-guard/internal/demoserver"
	"github.com/mcp-guard/mcp-guard/internal/safetext"
	"github.com/mcp-guard/mcp-guard/ledger"
)

const demoRules = `
[[rule]]
server = "notes"
tool = "read_note"
class = "read"
action = "allow"
labels = ["private"]

[[rule]]
server = "notes"
tool = "write_note"
class = "write"
action = "allow"
when = { "/id" = { prefix = "scratch-" } }

[[rule]]
server = "notes"
tool = "delete_*"
class = "destructive"
action = "deny"
reason = "deleting every note is never done from a chat"

[[rule]]
server = "notes"
tool = "update"
class = "write"
action = "allow"

[[rule]]
server = "notes"
tool = "share_note"
class = "network"
action = "allow"
`

// cmdDemoUpstream runs the notes server `demo` guards, on stdio (a hidden
// command: `demo` starts it through mcp-guard serve).
func cmdDemoUpstream(args []string, c cli) error {
	if len(args) > 0 {
		return usageErr("demo-upstream: takes no arguments")
	}
	return demoserver.Serve(c.ctx, c.stdin, c.stdout, c.stderr)
}

// cmdDemo runs a governed session on embedded defaults: a built-in upstream,
// a temporary ledger and a scripted host, narrating what mcp-guard does.
func cmdDemo(args []string, c cli) error {
	fs := newFlagSet("demo")
	if err := parseFlags(fs, args, c); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErr("demo: takes no arguments")
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	dir, err := os.MkdirTemp("", "mcp-guard-demo-")
	if err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	defer os.RemoveAll(dir)
	cfgPath := filepath.Join(dir, "config.toml")
	cfg := fmt.Sprintf("[ledger]\npath = %q\n\n[[server]]\nname = \"notes\"\ncommand = [%q, \"demo-upstream\"]\n%s",
		filepath.Join(dir, "state", "ledger.db"), self, demoRules)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	w := c.stdout
	fmt.Fprintf(w, "mcp-guard demo: a host, mcp-guard and a notes server, on built-in defaults.\n")
	fmt.Fprintf(w, "Everything lives in %s and is removed at the end; nothing touches the network.\n\n", dir)

	h, err := startDemoHost(self, cfgPath, dir)
	if err != nil {
		return err
	}
	defer h.close()
	failed := func(step string, got any) error {
		return &exitError{code: 1, err: fmt.Errorf("demo: %s did not behave as expected: %v\nmcp-guard said:\n%s", step, got, h.stderr.String())}
	}

	fmt.Fprintln(w, "1. The host lists tools. mcp-guard pinned each one from the exact bytes the server sent,")
	fmt.Fprintln(w, "   and shows only those a rule classifies, as <server>__<tool>:")
	names, err := h.toolNames()
	if err != nil {
		return failed("tools/list", err)
	}
	fmt.Fprintf(w, "     %s\n\n", strings.Join(names, "  "))

	fmt.Fprintln(w, "2. An allowed call: rule 1 allows notes/read_note. It is recorded in the ledger, then forwarded.")
	fmt.Fprintln(w, "   The rule labels what it returns private, so this session now holds private data:")
	res, err := h.call("notes__read_note", `{"id":"groceries"}`)
	if err != nil || res.IsError {
		return failed("the allowed call", err)
	}
	fmt.Fprintf(w, "     notes__read_note {\"id\":\"groceries\"}  ->  %s\n\n", res.text(90))

	fmt.Fprintln(w, "3. A denied call: rule 3 denies notes/delete_*. The server never sees it; the model reads why:")
	res, err = h.call("notes__delete_all", `{}`)
	if err != nil || !res.IsError {
		return failed("the denied call", err)
	}
	fmt.Fprintf(w, "     notes__delete_all {}  ->  %s\n\n", res.text(140))

	fmt.Fprintln(w, "4. Arguments are checked against the pinned schema and the rules' predicates before anything is sent:")
	res, err = h.call("notes__write_note", `{"id":"scratch-1"}`)
	if err != nil || !res.IsError {
		return failed("the invalid call", err)
	}
	fmt.Fprintf(w, "     notes__write_note {\"id\":\"scratch-1\"}  ->  %s\n", res.text(140))
	res, err = h.call("notes__write_note", `{"id":"taxes","text":"x"}`)
	if err != nil || !res.IsError {
		return failed("the call outside the rule's predicate", err)
	}
	fmt.Fprintf(w, "     notes__write_note {\"id\":\"taxes\",...}  ->  %s\n\n", res.text(140))

	fmt.Fprintln(w, "5. A flow: rule 5 allows sharing a note, but this session read private data (step 2), and private")
	fmt.Fprintln(w, "   data goes to network calls only with the operator's approval. The call waits; the operator reads")
	fmt.Fprintln(w, "   exactly what will run and why (`mcp-guard approvals show ID`) and approves it, naming the digest:")
	type answer struct {
		res demoResult
		err error
	}
	asked := make(chan answer, 1)
	go func() {
		res, err := h.call("notes__share_note", `{"id":"groceries","with":"sam@example.com"}`)
		asked <- answer{res, err}
	}()
	led, err := ledger.Open(c.ctx, filepath.Join(dir, "state", "ledger.db"), ledger.Options{})
	if err != nil {
		return failed("opening the ledger", err)
	}
	var pending []ledger.Approval
	for deadline := time.Now().Add(10 * time.Second); len(pending) == 0; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			led.Close()
			return failed("the ask", "no approval appeared")
		}
		pending, _ = led.Approvals(c.ctx, ledger.ApprovalPending, 0, 1)
	}
	led.Close()
	a := pending[0]
	for _, l := range strings.Split(strings.TrimRight(a.Presentation, "\n"), "\n") {
		fmt.Fprintf(w, "     | %s\n", l)
	}
	var decided strings.Builder
	id := strconv.FormatInt(a.ID, 10)
	if err := cmdDecide("approve", []string{id, "--shown", a.PresentationDigest, "--config", cfgPath}, cli{ctx: c.ctx, stdout: &decided, stderr: io.Discard, env: c.env}); err != nil {
		return failed("approve", err)
	}
	fmt.Fprintf(w, "     $ mcp-guard approve %s --shown %s…  ->  %s\n", id, a.PresentationDigest[:12], strings.TrimSpace(decided.String()))
	ans := <-asked
	if ans.err != nil || ans.res.IsError {
		return failed("the approved call", ans.err)
	}
	fmt.Fprintf(w, "     notes__share_note  ->  %s (the server ran it once)\n\n", ans.res.text(90))

	fmt.Fprintln(w, "6. A rug pull: the server changes read_note's description to smuggle in instructions, and says")
	fmt.Fprintln(w, "   its tools changed. mcp-guard lists them again, sees the pin no longer matches, and withdraws it:")
	if _, err := h.call("notes__update", `{}`); err != nil {
		return failed("the update call", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		names, err = h.toolNames()
		if err == nil && !slices.Contains(names, "notes__read_note") {
			break
		}
		if time.Now().After(deadline) {
			return failed("withdrawing the changed tool", names)
		}
		time.Sleep(100 * time.Millisecond)
	}
	fmt.Fprintf(w, "     the host now sees: %s\n", strings.Join(names, "  "))
	_, err = h.call("notes__read_note", `{"id":"groceries"}`)
	if err == nil {
		return failed("calling the withdrawn tool", "it was answered")
	}
	fmt.Fprintf(w, "     notes__read_note  ->  %s\n", safetext.Show(err.Error(), 140))
	fmt.Fprintln(w, "   The operator sees what changed with `mcp-guard pin diff notes/read_note`:")
	var diff strings.Builder
	if err := cmdPin([]string{"diff", "notes/read_note", "--config", cfgPath}, cli{ctx: c.ctx, stdout: &diff, stderr: io.Discard, env: c.env}); err != nil {
		return failed("pin diff", err)
	}
	for _, l := range strings.Split(strings.TrimRight(diff.String(), "\n"), "\n") {
		if strings.HasPrefix(l, "to ") || strings.TrimSpace(l) == "" {
			continue
		}
		fmt.Fprintf(w, "     | %s\n", l)
	}
	fmt.Fprintln(w, "   Until they accept it (`mcp-guard pin accept notes/read_note --digest ...`), it stays withdrawn.")
	fmt.Fprintln(w)

	h.close()
	fmt.Fprintln(w, "7. The ledger holds every call, refused ones too, in a hash chain (`mcp-guard log`, `mcp-guard verify`):")
	var log, ver strings.Builder
	if err := cmdLog([]string{"--config", cfgPath}, cli{ctx: c.ctx, stdout: &log, stderr: io.Discard, env: c.env}); err != nil {
		return failed("log", err)
	}
	for _, l := range strings.Split(strings.TrimRight(log.String(), "\n"), "\n") {
		fmt.Fprintf(w, "     %s\n", l)
	}
	if err := cmdVerify([]string{"--config", cfgPath}, cli{ctx: c.ctx, stdout: &ver, stderr: io.Discard, env: c.env}); err != nil {
		return failed("verify", err)
	}
	for _, l := range strings.Split(strings.TrimSpace(strings.Replace(ver.String(), filepath.Join(dir, "state", "ledger.db"), "(demo ledger)", 1)), "\n") {
		fmt.Fprintf(w, "     %s\n", l)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Next: `mcp-guard init` reads your Claude Desktop config and writes a starter config; the README walks through `init`, the rules, `wrap` and `watch`.")
	return nil
}

// demoHost is the demo's scripted MCP host: JSON-RPC lines to a real
// `mcp-guard serve` child.
type demoHost struct {
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	stderr *strings.Builder
	next   int
	closed bool
}

func startDemoHost(self, cfgPath, dir string) (*demoHost, error) {
	h := &demoHost{stderr: &strings.Builder{}}
	h.cmd = exec.Command(self, "serve", "--config", cfgPath)
	h.cmd.Env = []string{"HOME=" + dir, "PATH=" + os.Getenv("PATH")}
	h.cmd.Stderr = h.stderr
	var err error
	if h.in, err = h.cmd.StdinPipe(); err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	out, err := h.cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("demo: %w", err)
	}
	h.out = bufio.NewReaderSize(out, 1<<20)
	if err := h.cmd.Start(); err != nil {
		return nil, fmt.Errorf("demo: start mcp-guard serve: %w", err)
	}
	if _, err := h.request("initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"mcp-guard-demo","version":"1"}}`); err != nil {
		h.close()
		return nil, fmt.Errorf("demo: initialize: %w\n%s", err, h.stderr)
	}
	fmt.Fprintln(h.in, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return h, nil
}

type demoResult struct {
	Content []struct {
		Text string `json:"text"`
	} `json:"content"`
	IsError bool `json:"isError"`
}

func (r demoResult) text(max int) string {
	var b strings.Builder
	for _, c := range r.Content {
		b.WriteString(c.Text)
	}
	return safetext.Show(b.String(), max)
}

// request sends one request and reads lines until its response arrives.
func (h *demoHost) request(method, params string) (json.RawMessage, error) {
	h.next++
	id := strconv.Itoa(h.next)
	if _, err := fmt.Fprintf(h.in, `{"jsonrpc":"2.0","id":%s,"method":%q,"params":%s}`+"\n", id, method, params); err != nil {
		return nil, err
	}
	type reply struct {
		m   json.RawMessage
		err error
	}
	ch := make(chan reply, 1)
	go func() {
		for {
			line, err := h.out.ReadBytes('\n')
			if err != nil {
				ch <- reply{err: err}
				return
			}
			var m struct {
				ID     json.RawMessage `json:"id"`
				Result json.RawMessage `json:"result"`
				Error  *struct {
					Code    int    `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			if json.Unmarshal(line, &m) != nil || string(m.ID) != id {
				continue // a notification, or not ours
			}
			if m.Error != nil {
				ch <- reply{err: fmt.Errorf("JSON-RPC error %d: %s", m.Error.Code, m.Error.Message)}
				return
			}
			ch <- reply{m: m.Result}
			return
		}
	}()
	select {
	case r := <-ch:
		return r.m, r.err
	case <-time.After(20 * time.Second):
		return nil, errors.New("no answer within 20s")
	}
}

func (h *demoHost) toolNames() ([]string, error) {
	raw, err := h.request("tools/list", `{}`)
	if err != nil {
		return nil, err
	}
	var r struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, err
	}
	var names []string
	for _, t := range r.Tools {
		names = append(names, t.Name)
	}
	slices.Sort(names)
	return names, nil
}

func (h *demoHost) call(name, args string) (demoResult, error) {
	raw, err := h.request("tools/call", fmt.Sprintf(`{"name":%q,"arguments":%s}`, name, args))
	if err != nil {
		return demoResult{}, err
	}
	var r demoResult
	if err := json.Unmarshal(raw, &r); err != nil {
		return demoResult{}, err
	}
	return r, nil
}

func (h *demoHost) close() {
	if h.closed {
		return
	}
	h.closed = true
	h.in.Close()
	done := make(chan struct{})
	go func() { h.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		h.cmd.Process.Kill()
		<-done
	}
}
