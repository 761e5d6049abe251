package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-guard/mcp-guard/ledger"
)

// nobody is the unprivileged uid serve and the attacker run as: the
// ledger's owner, who must not be able to rewrite the witness.
const nobody = 65534

// journald is systemd-journald run standalone (no systemd as PID 1) in a
// private mount namespace with a tmpfs on /run, so the test owns it and
// its socket and files are its own.
type journald struct {
	pid int
	cmd *exec.Cmd
}

// needRoot skips the test when what it needs is not here: root (to drop to
// another uid), unshare, nsenter, setpriv, and journald when asked.
func needTools(t *testing.T, withJournald bool) {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("needs root: serve and the attacker run as uid 65534, the witness as root")
	}
	tools := []string{"unshare", "nsenter", "setpriv"}
	if withJournald {
		tools = append(tools, "journalctl", "logger")
	}
	for _, tool := range tools {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s is not installed: %v", tool, err)
		}
	}
	if withJournald {
		if _, err := os.Stat("/lib/systemd/systemd-journald"); err != nil {
			t.Skipf("systemd-journald is not installed: %v", err)
		}
	}
}

func startJournald(t *testing.T) *journald {
	t.Helper()
	needTools(t, true)
	cmd := exec.Command("unshare", "-m", "--propagation", "private", "sh", "-c",
		"mount -t tmpfs tmpfs /run && mkdir -p /run/systemd/journal /run/log/journal && exec /lib/systemd/systemd-journald")
	var out lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Skipf("unshare: %v", err)
	}
	j := &journald{pid: cmd.Process.Pid, cmd: cmd}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		<-exited
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		if fi, err := os.Stat(j.root("/run/systemd/journal/socket")); err == nil && fi.Mode()&os.ModeSocket != 0 {
			return j
		}
		select {
		case <-exited:
			t.Skipf("systemd-journald did not start in a private mount namespace: %s", out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("systemd-journald's socket did not appear: %s", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// root is path as seen inside journald's namespace, from outside it.
func (j *journald) root(path string) string {
	return fmt.Sprintf("/proc/%d/root%s", j.pid, path)
}

// as runs argv as uid nobody inside journald's mount namespace (where
// /run/systemd/journal/socket is this journald's).
func (j *journald) as(uid int, argv ...string) []string {
	return append([]string{"nsenter", "-t", strconv.Itoa(j.pid), "-m", "--", "setpriv",
		"--reuid=" + strconv.Itoa(uid), "--regid=" + strconv.Itoa(uid), "--clear-groups", "--"}, argv...)
}

// heads reads back what journald holds of mcp-guard's heads, as root,
// waiting until one satisfies until (journald writes what it received
// on its own schedule).
func (j *journald) heads(t *testing.T, until func([]ledger.Head) bool) []ledger.Head {
	t.Helper()
	var hs []ledger.Head
	eventually(t, "the heads to be in the journal", func() bool {
		var err error
		hs, err = ledger.ReadHeads(context.Background(), "journal:"+j.root("/run/log/journal"))
		if err != nil {
			t.Fatal(err)
		}
		return until(hs)
	})
	return hs
}

// readable lets the ledger's owner read the journal (not write it), as a
// member of systemd-journal or adm may on a real system.
func (j *journald) readable(t *testing.T) {
	t.Helper()
	err := filepath.Walk(j.root("/run/log/journal"), func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if fi.IsDir() {
			return os.Chmod(p, 0o755)
		}
		return os.Chmod(p, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// helperBins are the binaries copied where uid nobody can run them.
var helperOnce sync.Once
var helperErr string
var tamperBin string

// nobodyEnv is an env whose files belong to uid nobody and whose
// mcp-guard commands run as nobody inside j's namespace. It returns the
// env and a function running another binary the same way.
func nobodyEnv(t *testing.T, j *journald) (*env, func(argv ...string) (string, int)) {
	t.Helper()
	binaries(t)
	helperOnce.Do(func() {
		tamperBin = filepath.Join(bins.dir, "ledgertamper")
		if out, err := exec.Command("go", "build", "-o", tamperBin, "../../testdata/ledgertamper").CombinedOutput(); err != nil {
			helperErr = fmt.Sprintf("go build ledgertamper: %v\n%s", err, out)
		}
	})
	if helperErr != "" {
		t.Fatal(helperErr)
	}
	top, err := os.MkdirTemp("", "mcp-guard-witness-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(top) })
	bin := filepath.Join(top, "bin")
	home := filepath.Join(top, "home")
	for _, d := range []string{top, bin} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		os.Chmod(d, 0o755)
	}
	if err := os.Mkdir(home, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{bins.guard, bins.fakeup, tamperBin} {
		copyExe(t, b, filepath.Join(bin, filepath.Base(b)))
	}
	e := &env{t: t, dir: home, state: filepath.Join(home, "state")}
	guard := filepath.Join(bin, "mcp-guard")
	run := func(cmd *exec.Cmd, uid int) {
		chownAll(t, home, nobody)
		argv := j.as(uid, append([]string{guard}, cmd.Args[1:]...)...)
		if cmd.Args[0] != bins.guard && cmd.Path != bins.guard {
			argv = j.as(uid, cmd.Args...)
		}
		cmd.Path, cmd.Args = lookPath(t, "nsenter"), argv
	}
	e.wrap = func(cmd *exec.Cmd) { run(cmd, nobody) }
	other := func(argv ...string) (string, int) {
		t.Helper()
		cmd := exec.Command(argv[0], argv[1:]...)
		run(cmd, nobody)
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return string(out), ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(out), 0
	}
	return e, other
}

func lookPath(t *testing.T, name string) string {
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func copyExe(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o755); err != nil {
		t.Fatal(err)
	}
}

func chownAll(t *testing.T, dir string, uid int) {
	t.Helper()
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, uid)
	})
	if err != nil {
		t.Fatal(err)
	}
}

const witnessTools = `{"tools":[
{"name":"read_x","inputSchema":{"type":"object"}},
{"name":"run","inputSchema":{"type":"object"}}],
"calls":{"hang":{"do":"sleep","ms":30000}}}`

const witnessRules = `
[[rule]]
server = "db"
tool = "run"
class = "exec"
action = "allow"

[[rule]]
server = "db"
tool = "*"
class = "read"
action = "allow"
`

// witnessConfig writes a config whose [ledger] holds the witness settings.
func (e *env) witnessConfig(ledgerKeys, fake string) string {
	e.t.Helper()
	p := filepath.Join(e.dir, "config.toml")
	src := fmt.Sprintf("startup_wait = \"60s\"\n\n[ledger]\npath = %q\n%s\n\n%s%s", filepath.Join(e.state, "ledger.db"), ledgerKeys, fake, witnessRules)
	if err := os.WriteFile(p, []byte(src), 0o600); err != nil {
		e.t.Fatal(err)
	}
	return p
}

// aSession runs one host session through serve: a read call, then an exec
// call; the host then leaves and serve stops.
func aSession(t *testing.T, e *env, cfg string) {
	t.Helper()
	h := e.connect(cfg, "")
	for _, name := range []string{"db__read_x", "db__run"} {
		if res, err := h.call(t, name, map[string]any{"cmd": "true"}); err != nil || res.IsError {
			t.Fatalf("%s: %v %v\nstderr:\n%s", name, err, res, h.stderr)
		}
	}
	if err := h.Close(); err != nil {
		t.Logf("close: %v", err)
	}
}

func hasWhy(hs []ledger.Head, why string) bool {
	for _, h := range hs {
		if h.Why == why {
			return true
		}
	}
	return false
}

// Proves L3/L8 against the ledger's own user: serve (uid nobody) commits
// its heads to a real systemd-journald (root); the same uid then cuts the
// ledger's tail, or recomputes its chain, with the head rewound. verify
// without a witness passes and says it cannot detect this; verify
// --witness journal fails naming truncated or rewritten. The owner can
// neither write the journal's files nor hide the cut by forging a head.
func TestWitness_JournalShowsCutAndRewrite(t *testing.T) {
	t.Parallel()
	j := startJournald(t)
	for _, attack := range []string{"cut", "rewrite"} {
		t.Run(attack, func(t *testing.T) {
			e, as := nobodyEnv(t, j)
			fake := strings.ReplaceAll(e.fake("db", witnessTools), bins.fakeup, filepath.Join(filepath.Dir(e.dir), "bin", "fakeup"))
			cfg := e.witnessConfig("witness = [\"journal\"]\nwitness_every = 1000\nwitness_interval = \"1h\"", fake)
			aSession(t, e, cfg)
			ledgerPath := filepath.Join(e.state, "ledger.db")
			heads := j.heads(t, func(hs []ledger.Head) bool {
				n := 0
				for _, h := range hs {
					if h.Path == ledgerPath && (h.Why == "start" || h.Why == "exec" || h.Why == "stop") {
						n++
					}
				}
				return n == 3
			})
			j.readable(t)
			witness := "journal:/run/log/journal"
			out, code := e.mcpGuard("verify", "--config", cfg, "--witness", witness)
			if code != 0 || !strings.Contains(out, "witnessed heads of this ledger match it") {
				t.Fatalf("verify --witness before the attack: exit %d\n%s", code, out)
			}

			// The owner cannot rewrite the witness's files.
			if out, code := as("sh", "-c", "for f in /run/log/journal/*/*.journal; do : >> \"$f\" || exit 1; done"); code == 0 {
				t.Fatalf("uid %d could open the journal's files for writing: %s", nobody, out)
			}
			tamper := filepath.Join(filepath.Dir(e.dir), "bin", "ledgertamper")
			arg := "run"
			if attack == "rewrite" {
				arg = "2"
			}
			if out, code := as(tamper, attack, ledgerPath, arg); code != 0 {
				t.Fatalf("ledgertamper %s: exit %d: %s", attack, code, out)
			}

			out, code = e.mcpGuard("verify", "--config", cfg)
			if code != 0 || !strings.Contains(out, "hash chain intact") || !strings.Contains(out, "cannot detect a chain recomputed from an edited event, or a tail cut") {
				t.Fatalf("verify without a witness after the %s: exit %d (want 0: it cannot see this, and must say so)\n%s", attack, code, out)
			}
			t.Logf("verify without a witness after the %s:\n%s", attack, out)
			if attack == "cut" {
				// The owner also forges a head for the cut ledger: the
				// witness still holds the real, later ones.
				m := regexp.MustCompile(`head: seq ([0-9]+) hash ([0-9a-f]{64})`).FindStringSubmatch(out)
				if m == nil {
					t.Fatalf("verify printed no head:\n%s", out)
				}
				var id string
				for _, h := range heads {
					if h.Path == ledgerPath {
						id = h.Ledger
					}
				}
				forged := fmt.Sprintf("MESSAGE=forged\nSYSLOG_IDENTIFIER=mcp-guard\nMCP_GUARD_LEDGER=%s\nMCP_GUARD_PATH=%s\nMCP_GUARD_SEQ=%s\nMCP_GUARD_HASH=%s\nMCP_GUARD_WHY=stop\n", id, ledgerPath, m[1], m[2])
				fp := filepath.Join(e.dir, "forged")
				writeFile(t, fp, forged)
				if out, code := as("logger", "--journald="+fp); code != 0 {
					t.Fatalf("logger --journald: %s", out)
				}
				j.heads(t, func(hs []ledger.Head) bool { return len(hs) > len(heads) })
			}
			out, code = e.mcpGuard("verify", "--config", cfg, "--witness", witness)
			want := map[string]string{"cut": "truncated: the witness saw seq", "rewrite": "rewritten: the witness saw seq"}[attack]
			if code != 1 || !strings.Contains(out, want) || !strings.Contains(out, "does not match its witness (journal:/run/log/journal)") {
				t.Fatalf("verify --witness after the %s: exit %d, want 1 naming %q\n%s", attack, code, want, out)
			}
			t.Logf("verify --witness after the %s:\n%s", attack, out)
			if !strings.Contains(out, "uid "+strconv.Itoa(nobody)) {
				t.Errorf("verify does not say which uid sent the head it relies on:\n%s", out)
			}
		})
	}
}

// gram is a receiver for the journal's native protocol that the test owns:
// what serve sent is in its queue the moment Send returned.
type gram struct {
	path string
	conn *net.UnixConn
}

func listenJournal(t *testing.T) *gram {
	t.Helper()
	dir, err := os.MkdirTemp("", "jr")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	p := filepath.Join(dir, "socket")
	c, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: p, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &gram{path: p, conn: c}
}

// queued returns the MCP_GUARD_WHY of every datagram already queued,
// without waiting for more (recv with MSG_DONTWAIT).
func (g *gram) queued(t *testing.T) []string {
	t.Helper()
	rc, err := g.conn.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var whys []string
	buf := make([]byte, 64<<10)
	for {
		var n int
		var rerr error
		if err := rc.Control(func(fd uintptr) {
			n, _, rerr = syscall.Recvfrom(int(fd), buf, syscall.MSG_DONTWAIT)
		}); err != nil {
			t.Fatal(err)
		}
		if rerr == syscall.EAGAIN {
			return whys
		}
		if rerr != nil {
			t.Fatal(rerr)
		}
		for _, l := range bytes.Split(buf[:n], []byte("\n")) {
			if w, ok := bytes.CutPrefix(l, []byte("MCP_GUARD_WHY=")); ok {
				whys = append(whys, string(w))
			}
		}
	}
}

// Proves L8's sync witness: the head holding an exec call is in the
// witness's queue before the upstream has the call; a read call commits
// no head on its way (the witness is not on its path).
func TestWitness_ExecCallWitnessedBeforeUpstream(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	g := listenJournal(t)
	tools := `{"tools":[{"name":"read_x","inputSchema":{"type":"object"}},{"name":"run","inputSchema":{"type":"object"}}],"calls":{"run":{"do":"sleep","ms":60000}}}`
	cfg := e.witnessConfig(fmt.Sprintf("witness = [\"journal:%s\"]\nwitness_every = 1000\nwitness_interval = \"1h\"", g.path), e.fake("db", tools))
	h := e.connect(cfg, "")
	if res, err := h.call(t, "db__read_x", map[string]any{}); err != nil || res.IsError {
		t.Fatalf("read_x: %v %v", err, res)
	}
	if got := g.queued(t); strings.Join(got, ",") != "start" {
		t.Fatalf("after a read call the witness holds %v, want only the start head (a read call is not witnessed on its path)", got)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		h.CallTool(ctx, &mcp.CallToolParams{Name: "db__run", Arguments: json.RawMessage(`{"cmd":"rm -rf ~"}`)})
		close(done)
	}()
	eventually(t, "the exec call to reach the upstream", func() bool { return len(e.calls("db")) == 2 })
	if got := g.queued(t); strings.Join(got, ",") != "exec" {
		t.Fatalf("when the upstream had the exec call, the witness held %v, want the exec head", got)
	}
	cancel()
	<-done
}

// Proves L8: witness_required refuses to start serve when no witness can
// be reached, naming the key, the file and the witness; a reachable one
// starts. Without witness_required, serve starts and says so loudly, and
// check names what is reachable.
func TestWitness_RequiredRefusesToStart(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	g := listenJournal(t)
	gone := filepath.Join(e.dir, "no-journal")
	cfg := e.witnessConfig(fmt.Sprintf("witness = [\"journal:%s\"]\nwitness_required = true", gone), e.fake("db", witnessTools))
	out, code := e.mcpGuard("serve", "--config", cfg)
	if code != 1 || !strings.Contains(out, "ledger.witness_required is true in "+cfg) || !strings.Contains(out, gone) {
		t.Fatalf("serve with an unreachable required witness: exit %d\n%s", code, out)
	}
	out, code = e.mcpGuard("check", "--config", cfg)
	if code != 0 || !strings.Contains(out, "NONE REACHABLE") || !strings.Contains(out, "serve will refuse to start") {
		t.Fatalf("check: exit %d\n%s", code, out)
	}
	if out, code := e.mcpGuard("tools", "--config", cfg); code != 0 || !strings.Contains(out, "witness: NONE REACHABLE: journal:"+gone) {
		t.Fatalf("tools: exit %d\n%s", code, out)
	}

	cfg = e.witnessConfig(fmt.Sprintf("witness = [\"journal:%s\"]\nwitness_required = true", g.path), e.fake("db", witnessTools))
	out, code = e.mcpGuard("check", "--config", cfg)
	if code != 0 || !strings.Contains(out, "witness: journal:"+g.path+" (reachable)") {
		t.Fatalf("check: exit %d\n%s", code, out)
	}
	h := e.connect(cfg, "")
	if res, err := h.call(t, "db__run", map[string]any{}); err != nil || res.IsError {
		t.Fatalf("run with a reachable required witness: %v %v", err, res)
	}

	cfg = e.witnessConfig(fmt.Sprintf("witness = [\"journal:%s\"]", gone), e.fake("db", witnessTools))
	h = e.connect(cfg, "")
	if res, err := h.call(t, "db__run", map[string]any{}); err != nil || res.IsError {
		t.Fatalf("run with an unreachable witness not required: %v %v", err, res)
	}
	if s := h.stderr.String(); !strings.Contains(s, "WITNESS: NONE REACHABLE") || !strings.Contains(s, "WITNESS FAILED before an exec call") {
		t.Fatalf("serve did not say loudly that nothing witnesses the ledger:\n%s", s)
	}
}

// Proves L8 through the file witness and a head written down: verify
// --witness file:PATH and head:SEQ:HASH pass on an untouched ledger; a
// head that conflicts with a witnessed one fails (the same account can
// send forged heads: any conflict fails); and events written while no
// witness ran are named as not covered.
func TestWitness_FileAndWrittenDownHeads(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	heads := filepath.Join(e.dir, "heads.jsonl")
	cfg := e.witnessConfig(fmt.Sprintf("witness = [%q]", "file:"+heads), e.fake("db", witnessTools))
	aSession(t, e, cfg)
	hs, err := ledger.ReadHeads(context.Background(), "file:"+heads)
	if err != nil || len(hs) < 3 || hs[0].Why != "start" || hs[len(hs)-1].Why != "stop" || !hasWhy(hs, "exec") {
		t.Fatalf("file witness holds %+v (%v), want start, exec, stop", hs, err)
	}
	out, code := e.mcpGuard("verify", "--config", cfg, "--witness", "file:"+heads)
	if code != 0 || !strings.Contains(out, "witnessed heads of this ledger match it") || strings.Contains(out, "not covered") {
		t.Fatalf("verify --witness file: exit %d\n%s", code, out)
	}
	m := regexp.MustCompile(`head: seq ([0-9]+) hash ([0-9a-f]{64})`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("verify printed no head:\n%s", out)
	}
	written := "head:" + m[1] + ":" + m[2]
	if out, code := e.mcpGuard("verify", "--config", cfg, "--witness", written); code != 0 || !strings.Contains(out, "1 witnessed heads of this ledger match it") {
		t.Fatalf("verify --witness %s: exit %d\n%s", written, code, out)
	}
	last := hs[len(hs)-1]
	forged := fmt.Sprintf("head:%d:%s", last.Seq, strings.Repeat("0", 64))
	out, code = e.mcpGuard("verify", "--config", cfg, "--witness", "file:"+heads, "--witness", forged)
	if code != 1 || !strings.Contains(out, fmt.Sprintf("conflict: the witness holds two heads for seq %d", last.Seq)) {
		t.Fatalf("verify with conflicting heads: exit %d, want 1 naming the conflict\n%s", code, out)
	}

	// A session with no witness: its events are not covered, and verify
	// says so.
	cfg = e.witnessConfig("witness = []", e.fake("db", witnessTools))
	aSession(t, e, cfg)
	out, code = e.mcpGuard("verify", "--config", cfg, "--witness", "file:"+heads)
	if code != 0 || !strings.Contains(out, fmt.Sprintf("not covered: no witnessed head covers the tail, events %d to ", last.Seq+1)) {
		t.Fatalf("verify after an unwitnessed session: exit %d\n%s", code, out)
	}
}

// The syslog witness's RFC 3164 lines are read by a real syslog receiver:
// journald's own syslog socket (/run/systemd/journal/dev-log), which
// stores them by their tag; verify --witness journal reads them back.
func TestWitness_SyslogThroughJournald(t *testing.T) {
	t.Parallel()
	j := startJournald(t)
	e := newEnv(t)
	cfg := e.witnessConfig(fmt.Sprintf("witness = [%q]", "syslog:"+j.root("/run/systemd/journal/dev-log")), e.fake("db", witnessTools))
	aSession(t, e, cfg)
	ledgerPath := filepath.Join(e.state, "ledger.db")
	j.heads(t, func(hs []ledger.Head) bool {
		for _, h := range hs {
			if h.Path == ledgerPath && h.Why == "stop" {
				return true
			}
		}
		return false
	})
	out, code := e.mcpGuard("verify", "--config", cfg, "--witness", "journal:"+j.root("/run/log/journal"))
	if code != 0 || !strings.Contains(out, "witnessed heads of this ledger match it") || strings.Contains(out, "not covered") {
		t.Fatalf("verify --witness journal (heads sent by syslog): exit %d\n%s", code, out)
	}
}
