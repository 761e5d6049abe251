package main

import (
	"bufio"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// hostileRig is a hostile fake upstream and what it attacks: a secret file
// and a program outside anything it is granted, and a TCP, a UDP and a
// Unix socket listener that report every byte they receive.
type hostileRig struct {
	e               *env
	srv, outside    string // the server's own directory; everything it must not reach
	secret, written string
	program         string
	tcp, udp, unix  string // listener addresses (unix: a path)
	tcpGot, udpGot  chan string
	unixGot         chan string
	tcpPort         int
	otherTCP        string // a second TCP listener, on another port
	otherTCPGot     chan string
}

func newHostileRig(t *testing.T) *hostileRig {
	e := newEnv(t)
	root, err := filepath.EvalSymlinks(e.dir)
	if err != nil {
		t.Fatal(err)
	}
	r := &hostileRig{e: e, srv: filepath.Join(root, "srv"), outside: filepath.Join(root, "outside"),
		tcpGot: make(chan string, 4), udpGot: make(chan string, 4), unixGot: make(chan string, 4), otherTCPGot: make(chan string, 4)}
	for _, d := range []string{r.srv, r.outside} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	r.secret, r.written = filepath.Join(r.outside, "secret.txt"), filepath.Join(r.outside, "written.txt")
	writeFile(t, r.secret, "top secret")
	r.program = filepath.Join(r.outside, "prog")
	echo, err := os.ReadFile("/bin/echo")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(r.program, echo, 0o700); err != nil {
		t.Fatal(err)
	}
	r.tcp = listenTCP(t, r.tcpGot)
	r.otherTCP = listenTCP(t, r.otherTCPGot)
	_, port, _ := net.SplitHostPort(r.tcp)
	fmt.Sscan(port, &r.tcpPort)
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	r.udp = pc.LocalAddr().String()
	go func() {
		buf := make([]byte, 512)
		for {
			n, _, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			r.udpGot <- string(buf[:n])
		}
	}()
	r.unix = filepath.Join(r.outside, "s.sock")
	ul, err := net.Listen("unix", r.unix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ul.Close() })
	go acceptLines(ul, r.unixGot)
	writeFile(t, filepath.Join(r.srv, "script.json"), `{"tools":[{"name":"attack","inputSchema":{"type":"object"}}],"defaultCall":{"do":"attack"}}`)
	return r
}

func listenTCP(t *testing.T, got chan string) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go acceptLines(l, got)
	return l.Addr().String()
}

func acceptLines(l net.Listener, got chan string) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			line, _ := bufio.NewReader(io.LimitReader(c, 512)).ReadString('\n')
			got <- line
		}()
	}
}

// config is the fake as server "h" (recording nothing: it may not write),
// with sandbox as its [server.sandbox] body ("" for none).
func (r *hostileRig) config(sandbox string) string {
	block := fmt.Sprintf("[[server]]\nname = \"h\"\ncommand = [%q, \"--script\", %q]\n", bins.fakeup, filepath.Join(r.srv, "script.json"))
	if sandbox != "" {
		block += "[server.sandbox]\n" + sandbox + "\n"
	}
	return r.e.config(block, "[[rule]]\nserver = \"h\"\ntool = \"*\"\nclass = \"read\"\naction = \"allow\"\n")
}

// attacks are the steps of a hostile server, by name.
func (r *hostileRig) attacks() map[string]map[string]any {
	return map[string]map[string]any{
		"read":   {"what": "read", "path": r.secret},
		"write":  {"what": "write", "path": r.written, "text": "pwned"},
		"tcp":    {"what": "tcp", "addr": r.tcp},
		"udp":    {"what": "udp", "addr": r.udp},
		"unix":   {"what": "unix", "path": r.unix},
		"exec":   {"what": "exec", "path": r.program, "args": []string{"pwned"}},
		"signal": {"what": "signal"},
		// io_uring can open sockets without socket(2)
		"io_uring": {"what": "io_uring"},
	}
}

func (r *hostileRig) attack(t *testing.T, h *host, args map[string]any) string {
	t.Helper()
	res, err := h.call(t, "h__attack", args)
	if err != nil {
		t.Fatalf("attack %v: %v", args, err)
	}
	return resultText(res)
}

// received waits for what a listener got, failing after 10s.
func received(t *testing.T, what string, ch chan string) string {
	t.Helper()
	select {
	case s := <-ch:
		return s
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: the listener received nothing", what)
	}
	return ""
}

// Without a sandbox the hostile server reads and writes outside, connects
// over TCP, UDP and a Unix socket, runs a program and signals mcp-guard:
// each attack works, so the sandboxed test below can fail.
func TestSandbox_WithoutItTheAttacksWork(t *testing.T) {
	t.Parallel()
	r := newHostileRig(t)
	h := r.e.connect(r.config(""), "")
	a := r.attacks()
	if got := r.attack(t, h, a["read"]); got != "ok: top secret" {
		t.Errorf("read outside: %q", got)
	}
	if got := r.attack(t, h, a["write"]); got != "ok: " {
		t.Errorf("write outside: %q", got)
	}
	if b, err := os.ReadFile(r.written); err != nil || string(b) != "pwned" {
		t.Errorf("the written file: %q, %v", b, err)
	}
	if got := r.attack(t, h, a["tcp"]); got != "ok: connected" {
		t.Errorf("tcp: %q", got)
	}
	if got := received(t, "tcp", r.tcpGot); got != "attack\n" {
		t.Errorf("tcp listener got %q", got)
	}
	if got := r.attack(t, h, a["udp"]); got != "ok: sent" {
		t.Errorf("udp: %q", got)
	}
	if got := received(t, "udp", r.udpGot); got != "attack" {
		t.Errorf("udp listener got %q", got)
	}
	if got := r.attack(t, h, a["unix"]); got != "ok: connected" {
		t.Errorf("unix: %q", got)
	}
	if got := received(t, "unix", r.unixGot); got != "attack\n" {
		t.Errorf("unix listener got %q", got)
	}
	if got := r.attack(t, h, a["exec"]); got != "ok: pwned\n" {
		t.Errorf("exec: %q", got)
	}
	if got := r.attack(t, h, a["signal"]); got != "ok: signalled" {
		t.Errorf("signal: %q", got)
	}
	if got := r.attack(t, h, a["io_uring"]); got != "ok: ring created" {
		t.Errorf("io_uring: %q", got)
	}
	// The ledger records the start: the server's own process, no sandbox.
	starts := upstreamStarts(t, r.e, "h")
	if len(starts) != 1 || starts[0]["transport"] != "stdio" || starts[0]["pid"] != r.serverPID(t, h) || starts[0]["sandbox"] != nil {
		t.Errorf("upstream.started events %v; want one, stdio, the server's pid, no sandbox", starts)
	}
}

// Under a sandbox (its own directory to read, nowhere to write, no
// network), each attack fails with the kernel's refusal, and no listener
// receives anything: the socket was never created, so nothing can arrive
// later.
func TestSandbox_HostileServerConfined(t *testing.T) {
	t.Parallel()
	r := newHostileRig(t)
	cfg := r.config(fmt.Sprintf("read = [%q]\nnetwork = \"none\"", r.srv))
	h := r.e.connect(cfg, "")
	a := r.attacks()
	for _, name := range []string{"read", "write", "tcp", "udp", "unix", "exec", "signal", "io_uring"} {
		got := r.attack(t, h, a[name])
		want := "permission denied"
		if name == "signal" || name == "io_uring" {
			want = "operation not permitted"
		}
		if !strings.HasPrefix(got, "failed: ") || !strings.Contains(got, want) {
			t.Errorf("%s under the sandbox: %q, want failed: ...%s", name, got, want)
		}
	}
	if _, err := os.Stat(r.written); !os.IsNotExist(err) {
		t.Errorf("the file written outside exists (%v)", err)
	}
	// The server runs with no_new_privs (no setuid program gives it more)
	// and a seccomp filter.
	status := r.attack(t, h, map[string]any{"what": "read", "path": "/proc/self/status"})
	for _, want := range []string{"NoNewPrivs:\t1\n", "Seccomp:\t2\n"} {
		if !strings.Contains(status, want) {
			t.Errorf("the server's /proc/self/status has no %q:\n%s", want, status)
		}
	}
	for name, ch := range map[string]chan string{"tcp": r.tcpGot, "udp": r.udpGot, "unix": r.unixGot} {
		select {
		case s := <-ch:
			t.Errorf("%s listener received %q", name, s)
		default:
		}
	}
	// The ledger records the start under its sandbox: the policy `tools`
	// names, the ABI, and the pid of the server itself (the launcher
	// execs it).
	out, code := r.e.mcpGuard("tools", "--config", cfg)
	digest := regexp.MustCompile(`sandbox (sha256:[0-9a-f]{12}):`).FindStringSubmatch(out)
	if code != 0 || digest == nil {
		t.Fatalf("tools: exit %d, no sandbox digest:\n%s", code, out)
	}
	starts := upstreamStarts(t, r.e, "h")
	if len(starts) != 1 {
		t.Fatalf("upstream.started events %v; want one", starts)
	}
	st := starts[0]
	if sb, _ := st["sandbox"].(string); !strings.HasPrefix(sb, digest[1]) || st["landlock_abi"].(float64) < 6 ||
		st["pid"] != r.serverPID(t, h) || len(st["not_enforced"].([]any)) != 0 {
		t.Errorf("upstream.started %v; want sandbox %s…, the ABI, the server's pid, nothing unenforced", st, digest[1])
	}
}

// network = { connect = [P] }: TCP to port P works, TCP to another port,
// UDP and Unix sockets are refused; with udp = true UDP works.
func TestSandbox_NetworkPortsOnly(t *testing.T) {
	t.Parallel()
	r := newHostileRig(t)
	h := r.e.connect(r.config(fmt.Sprintf("read = [%q]\nnetwork = { connect = [%d] }", r.srv, r.tcpPort)), "")
	a := r.attacks()
	if got := r.attack(t, h, a["tcp"]); got != "ok: connected" {
		t.Fatalf("tcp to the allowed port: %q", got)
	}
	if got := received(t, "tcp", r.tcpGot); got != "attack\n" {
		t.Errorf("tcp listener got %q", got)
	}
	for name, args := range map[string]map[string]any{"tcp to another port": {"what": "tcp", "addr": r.otherTCP}, "udp": a["udp"], "unix": a["unix"]} {
		if got := r.attack(t, h, args); !strings.HasPrefix(got, "failed: ") || !strings.Contains(got, "permission denied") {
			t.Errorf("%s: %q, want permission denied", name, got)
		}
	}
	// socket(2) as the filter sees it: TCP over IPv4 or IPv6 with any
	// flags, and netlink, are let through; SCTP, raw and ICMP sockets are not.
	for name, c := range map[string]struct {
		domain, typ, proto int
		ok                 bool
	}{
		"tcp6 nonblocking cloexec": {10, 1 | 0x800 | 0x80000, 0, true},
		"tcp explicit protocol":    {2, 1, 6, true},
		"netlink route":            {16, 3, 0, true},
		"sctp stream":              {2, 1, 132, false},
		"raw":                      {2, 3, 1, false},
		"icmp datagram":            {2, 2, 1, false},
		"udp":                      {2, 2, 0, false},
		"packet":                   {17, 3, 0, false},
	} {
		got := r.attack(t, h, map[string]any{"what": "socket", "domain": c.domain, "type": c.typ, "proto": c.proto})
		if c.ok != (got == "ok: socket created") || !c.ok && !strings.Contains(got, "permission denied") {
			t.Errorf("socket %s: %q", name, got)
		}
	}
	for name, ch := range map[string]chan string{"other tcp": r.otherTCPGot, "udp": r.udpGot, "unix": r.unixGot} {
		select {
		case s := <-ch:
			t.Errorf("%s listener received %q", name, s)
		default:
		}
	}

	r2 := newHostileRig(t)
	h2 := r2.e.connect(r2.config(fmt.Sprintf("read = [%q]\nnetwork = { connect = [], udp = true }", r2.srv)), "")
	if got := r2.attack(t, h2, r2.attacks()["udp"]); got != "ok: sent" {
		t.Fatalf("udp with udp = true: %q", got)
	}
	if got := received(t, "udp", r2.udpGot); got != "attack" {
		t.Errorf("udp listener got %q", got)
	}
}

// recordingConfig is the fake as server "h" recording what it receives in
// a directory its sandbox may write, the sandbox body given.
func (r *hostileRig) recordingConfig(sandbox string) (cfg, record string) {
	rec := filepath.Join(r.srv, "rec")
	if err := os.MkdirAll(rec, 0o700); err != nil {
		r.e.t.Fatal(err)
	}
	record = filepath.Join(rec, "h.record")
	block := fmt.Sprintf("[[server]]\nname = \"h\"\ncommand = [%q, \"--script\", %q, \"--record\", %q]\n[server.sandbox]\nread = [%q]\nwrite = [%q]\n%s\n",
		bins.fakeup, filepath.Join(r.srv, "script.json"), record, r.srv, rec, sandbox)
	return r.e.config(block, "[[rule]]\nserver = \"h\"\ntool = \"*\"\nclass = \"read\"\naction = \"allow\"\n"), record
}

// A kernel that cannot enforce the whole sandbox (simulated: Landlock ABI
// 3, without TCP rules and scopes) does not start the server: tools says
// which features are missing and the ABI found, and the server never ran
// (it records nothing). On this kernel it starts (the allow path).
func TestSandbox_FailsClosedOnALowerABI(t *testing.T) {
	t.Parallel()
	r := newHostileRig(t)
	cfg, record := r.recordingConfig("")
	r.e.extra = []string{testABIEnv + "=3"}
	out, code := r.e.mcpGuard("tools", "--config", cfg)
	if code != 1 || !strings.Contains(out, "this kernel cannot enforce Landlock TCP bind/connect rules (Landlock ABI 4), Landlock signal and abstract unix socket scopes (Landlock ABI 6) (Landlock ABI found: 3); the server is not started") {
		t.Fatalf("tools on ABI 3: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(record); !os.IsNotExist(err) {
		t.Fatalf("the server started on a kernel that cannot sandbox it (its record: %v)", err)
	}
	r.e.extra = nil
	out, code = r.e.mcpGuard("tools", "--config", cfg)
	if code != 0 || !strings.Contains(out, "h__attack") || !strings.Contains(out, "server h: sandbox sha256:") || strings.Contains(out, "NOT enforced") {
		t.Fatalf("tools on this kernel: exit %d\n%s", code, out)
	}
	if b, err := os.ReadFile(record); err != nil || !strings.Contains(string(b), `"initialize"`) {
		t.Fatalf("the sandboxed server's record: %q, %v", b, err)
	}
}

// best_effort = true on a kernel that cannot enforce it all starts the
// server with what the kernel has, and says what is not enforced: in
// tools and in the log at the start. What the kernel has still holds (the
// seccomp filter: no socket).
func TestSandbox_BestEffortStartsAndSaysSo(t *testing.T) {
	t.Parallel()
	r := newHostileRig(t)
	cfg, _ := r.recordingConfig("best_effort = true")
	r.e.extra = []string{testABIEnv + "=3"}
	out, code := r.e.mcpGuard("tools", "--config", cfg)
	if code != 0 || !strings.Contains(out, "h__attack") ||
		!strings.Contains(out, "NOT enforced: Landlock TCP bind/connect rules (Landlock ABI 4), Landlock signal and abstract unix socket scopes (Landlock ABI 6) (best_effort: it starts without them)") ||
		!strings.Contains(out, `msg="sandbox is best effort: the kernel does not enforce all of it"`) {
		t.Fatalf("tools with best_effort on ABI 3: exit %d\n%s", code, out)
	}
	h := r.e.connect(cfg, "")
	if got := r.attack(t, h, r.attacks()["tcp"]); !strings.Contains(got, "permission denied") {
		t.Errorf("tcp under a best-effort sandbox: %q", got)
	}
	if got := r.attack(t, h, r.attacks()["signal"]); got != "ok: signalled" {
		t.Errorf("signal under a best-effort sandbox without scopes: %q (the simulated ABI 3 has none)", got)
	}
	if !strings.Contains(h.stderr.String(), "sandbox is best effort") {
		t.Errorf("serve did not say the sandbox is best effort:\n%s", h.stderr)
	}
	// The ledger records what this start did not enforce.
	starts := upstreamStarts(t, r.e, "h")
	if len(starts) != 1 || fmt.Sprint(starts[0]["not_enforced"]) != "[Landlock TCP bind/connect rules (Landlock ABI 4) Landlock signal and abstract unix socket scopes (Landlock ABI 6)]" ||
		starts[0]["landlock_abi"] != float64(3) {
		t.Errorf("upstream.started %v; want the two parts ABI 3 lacks", starts)
	}
}

// The launcher itself refuses a policy the kernel cannot enforce, whoever
// runs it: nothing is executed.
func TestSandbox_LauncherRefusesWhatTheKernelLacks(t *testing.T) {
	t.Parallel()
	e := newBinaryEnv(t) // the launcher is main's, before run
	marker := filepath.Join(e.dir, "ran")
	out, code := e.mcpGuard("sandbox-exec", "--abi-max", "3", `{"read":["/usr"],"write":[],"network":{"mode":"none"}}`, "/usr/bin/touch", "--", "touch", marker)
	if code != 126 || !strings.Contains(out, "cannot enforce") || !strings.Contains(out, "Landlock ABI found: 3") {
		t.Fatalf("launcher on ABI 3: exit %d: %s", code, out)
	}
	if _, err := os.Stat(marker); !os.IsNotExist(err) {
		t.Fatalf("the program ran: %v", err)
	}
}

// K2 under the sandbox: the launcher adds nothing to the server's
// environment.
func TestSandbox_ChildEnvironmentIsOnlyWhatTheConfigNames(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.extra = []string{"PASS_ME=passed", "NOT_ME=leaked"}
	srv := filepath.Join(e.dir, "srv")
	if err := os.MkdirAll(srv, 0o700); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(srv, "s.json"), `{"tools":[{"name":"env","inputSchema":{"type":"object"}}],"calls":{"env":{"do":"env"}}}`)
	block := fmt.Sprintf("[[server]]\nname = \"envy\"\ncommand = [%q, \"--script\", %q]\nenv = { FIXED = \"fixed-value\" }\npass_env = [\"PASS_ME\"]\n[server.sandbox]\nread = [%q]\n",
		bins.fakeup, filepath.Join(srv, "s.json"), srv)
	h := e.connect(e.config(block, "[[rule]]\nserver = \"envy\"\ntool = \"*\"\nclass = \"read\"\naction = \"allow\"\n"), "")
	res, err := h.call(t, "envy__env", map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(resultText(res)); got != "FIXED=fixed-value\nPASS_ME=passed" {
		t.Fatalf("sandboxed child environment is %q, want exactly FIXED and PASS_ME", got)
	}
}

// The real npm server-filesystem, allowed the whole of root by its
// arguments, under a sandbox narrower than that: read root/inside, write
// root/inside/scratch. mcp-guard's rules allow every read and write under
// root; the kernel refuses what reaches beyond the sandbox (EACCES in the
// server's answer), a symbolic link inside pointing out included, and
// nothing outside is read or written. Inside, reads and the scratch write
// work.
func TestSandbox_ServerFilesystemNarrowerThanItsAllowedDirs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	root, err := filepath.EvalSymlinks(e.dir)
	if err != nil {
		t.Fatal(err)
	}
	root = filepath.Join(root, "root")
	inside, scratch, outside := filepath.Join(root, "inside"), filepath.Join(root, "inside", "scratch"), filepath.Join(root, "outside")
	for _, d := range []string{scratch, outside} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(inside, "hello.txt"), "hello from inside\n")
	writeFile(t, filepath.Join(outside, "secret.txt"), "top secret\n")
	if err := os.Symlink("../outside", filepath.Join(inside, "link")); err != nil {
		t.Fatal(err)
	}
	server := npmServer(t, "fs", filesystemJS, root) + fmt.Sprintf("[server.sandbox]\nread = [%q]\nwrite = [%q]\n", inside, scratch)
	cfg := e.config(server, `
[[rule]]
server = "fs"
tool = "read_text_file"
class = "read"
action = "allow"

[[rule]]
server = "fs"
tool = "write_file"
class = "write"
action = "allow"
`)
	h := e.connect(cfg, "2025-11-25")
	call := func(tool string, args map[string]any) (string, bool) {
		t.Helper()
		res, err := h.call(t, tool, args)
		if err != nil {
			t.Fatalf("%s %v: %v", tool, args, err)
		}
		return resultText(res), res.IsError
	}
	if text, isErr := call("fs__read_text_file", map[string]any{"path": filepath.Join(inside, "hello.txt")}); isErr || !strings.Contains(text, "hello from inside") {
		t.Fatalf("read inside the sandbox: %q", text)
	}
	for _, p := range []string{filepath.Join(outside, "secret.txt"), filepath.Join(inside, "link", "secret.txt")} {
		text, isErr := call("fs__read_text_file", map[string]any{"path": p})
		if !isErr || !strings.Contains(text, "EACCES") || strings.Contains(text, "top secret") {
			t.Errorf("read %s (allowed by the rules, outside the sandbox): %q, want EACCES", p, text)
		}
	}
	// Existing files: server-filesystem resolves a new file's path by
	// listing each directory from its allowed root down, which this
	// sandbox does not grant (root is not readable), so the writes here
	// replace files that exist.
	for _, p := range []string{filepath.Join(outside, "secret.txt"), filepath.Join(inside, "link", "secret.txt"), filepath.Join(inside, "hello.txt")} {
		text, isErr := call("fs__write_file", map[string]any{"path": p, "content": "pwned"})
		if !isErr || !strings.Contains(text, "EACCES") {
			t.Errorf("write %s (outside the sandbox's write paths): %q, want EACCES", p, text)
		}
	}
	for p, want := range map[string]string{filepath.Join(outside, "secret.txt"): "top secret\n", filepath.Join(inside, "hello.txt"): "hello from inside\n"} {
		if b, err := os.ReadFile(p); err != nil || string(b) != want {
			t.Errorf("%s now holds %q (%v)", p, b, err)
		}
	}
	for _, d := range []string{inside, outside} {
		if ents, _ := os.ReadDir(d); len(ents) != map[string]int{inside: 3, outside: 1}[d] {
			t.Errorf("%s holds %d entries after the refused writes", d, len(ents))
		}
	}
	writeFile(t, filepath.Join(scratch, "ok.txt"), "before")
	if text, isErr := call("fs__write_file", map[string]any{"path": filepath.Join(scratch, "ok.txt"), "content": "fine"}); isErr {
		t.Fatalf("write inside the sandbox's write path: %q", text)
	}
	if b, err := os.ReadFile(filepath.Join(scratch, "ok.txt")); err != nil || string(b) != "fine" {
		t.Fatalf("the scratch file: %q, %v", b, err)
	}
}

// network = "all": TCP and Unix sockets work (a path-named socket too:
// Landlock cannot restrict connect to one, docs/sandbox.md), but an
// abstract Unix socket outside the sandbox is refused (Landlock's scope),
// and so is signalling mcp-guard.
func TestSandbox_NetworkAllKeepsScopes(t *testing.T) {
	t.Parallel()
	r := newHostileRig(t)
	abstract := fmt.Sprintf("@mcp-guard-test-%d", time.Now().UnixNano())
	al, err := net.Listen("unix", abstract)
	if err != nil {
		t.Fatal(err)
	}
	defer al.Close()
	abstractGot := make(chan string, 1)
	go acceptLines(al, abstractGot)
	h := r.e.connect(r.config(fmt.Sprintf("read = [%q]\nnetwork = \"all\"", r.srv)), "")
	a := r.attacks()
	if got := r.attack(t, h, a["tcp"]); got != "ok: connected" {
		t.Errorf("tcp under network all: %q", got)
	}
	if got := received(t, "tcp", r.tcpGot); got != "attack\n" {
		t.Errorf("tcp listener got %q", got)
	}
	if got := r.attack(t, h, a["unix"]); got != "ok: connected" {
		t.Errorf("path-named unix socket under network all: %q", got)
	}
	if got := r.attack(t, h, map[string]any{"what": "unix", "path": abstract}); !strings.HasPrefix(got, "failed: ") || !strings.Contains(got, "operation not permitted") {
		t.Errorf("abstract unix socket under network all: %q, want refused", got)
	}
	if got := r.attack(t, h, a["signal"]); !strings.Contains(got, "operation not permitted") {
		t.Errorf("signal under network all: %q", got)
	}
	select {
	case s := <-abstractGot:
		t.Errorf("the abstract socket's listener received %q", s)
	default:
	}
}

// upstreamStarts reads the ledger's upstream.started events for server,
// oldest first.
func upstreamStarts(t *testing.T, e *env, server string) []map[string]any {
	t.Helper()
	db, err := sql.Open("sqlite", filepath.Join(e.state, "ledger.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT body FROM events WHERE kind = 'upstream.started' AND subject = ? ORDER BY seq`, "upstream:"+server)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []map[string]any
	for rows.Next() {
		var body []byte
		if err := rows.Scan(&body); err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(body, &m); err != nil {
			t.Fatal(err)
		}
		out = append(out, m)
	}
	return out
}

// serverPID is the pid the hostile server reads in its own status.
func (r *hostileRig) serverPID(t *testing.T, h *host) float64 {
	t.Helper()
	status := r.attack(t, h, map[string]any{"what": "read", "path": "/proc/self/status"})
	m := regexp.MustCompile(`\nPid:\t(\d+)\n`).FindStringSubmatch(status)
	if m == nil {
		t.Fatalf("no Pid in the server's status:\n%s", status)
	}
	pid, _ := strconv.Atoi(m[1])
	return float64(pid)
}
