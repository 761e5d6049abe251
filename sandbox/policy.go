package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// Network modes.
const (
	NetNone  = "none"  // no socket() at all (socketpair stays)
	NetAll   = "all"   // the network is not restricted
	NetPorts = "ports" // TCP connect/bind to the listed ports, UDP only if asked
)

// Network is what a sandboxed server may do on the network.
type Network struct {
	Mode    string   `json:"mode"`
	Connect []uint16 `json:"connect,omitempty"`
	Bind    []uint16 `json:"bind,omitempty"`
	UDP     bool     `json:"udp,omitempty"`
}

// Policy is a server's sandbox: absolute, cleaned paths it may read (and
// execute) beneath, paths it may write beneath (and read), and its network.
type Policy struct {
	Read       []string `json:"read"`
	Write      []string `json:"write"`
	Network    Network  `json:"network"`
	BestEffort bool     `json:"best_effort,omitempty"`
}

// Digest is "sha256:" and the hex SHA-256 of the policy's JSON form (paths
// sorted): the same policy always has the same digest.
func (p Policy) Digest() string {
	n := p.normalized()
	b, _ := json.Marshal(n)
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

func (p Policy) normalized() Policy {
	p.Read = sortedUnique(p.Read)
	p.Write = sortedUnique(p.Write)
	p.Network.Connect = slices.Sorted(slices.Values(p.Network.Connect))
	p.Network.Connect = slices.Compact(p.Network.Connect)
	p.Network.Bind = slices.Sorted(slices.Values(p.Network.Bind))
	p.Network.Bind = slices.Compact(p.Network.Bind)
	return p
}

func sortedUnique(s []string) []string {
	out := slices.Clone(s)
	sort.Strings(out)
	return slices.Compact(out)
}

// Encode is the policy as the launcher's argument.
func (p Policy) Encode() string {
	b, _ := json.Marshal(p.normalized())
	return string(b)
}

// Decode reads a policy the launcher was given.
func Decode(s string) (Policy, error) {
	var p Policy
	if err := json.Unmarshal([]byte(s), &p); err != nil {
		return Policy{}, fmt.Errorf("sandbox: policy: %w", err)
	}
	switch p.Network.Mode {
	case NetNone, NetAll, NetPorts:
	default:
		return Policy{}, fmt.Errorf("sandbox: policy: network mode %q", p.Network.Mode)
	}
	for _, d := range append(slices.Clone(p.Read), p.Write...) {
		if !filepath.IsAbs(d) {
			return Policy{}, fmt.Errorf("sandbox: policy: %q is not absolute", d)
		}
	}
	return p, nil
}

// String says in one line what the policy allows.
func (p Policy) String() string {
	net := p.Network.Mode
	if p.Network.Mode == NetPorts {
		net = fmt.Sprintf("tcp connect %v bind %v udp %v", p.Network.Connect, p.Network.Bind, p.Network.UDP)
	}
	return fmt.Sprintf("read %d paths, write %s, network %s", len(p.Read), listOrNone(p.Write), net)
}

func listOrNone(s []string) string {
	if len(s) == 0 {
		return "nowhere"
	}
	return strings.Join(s, ", ")
}

// systemRead are read (and execute) beneath in every sandbox: the system's
// programs, libraries and certificates, what a dynamic loader, node and
// python read at start, and the kernel's views of the process itself.
// Paths that do not exist are skipped.
var systemRead = []string{
	"/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32", "/opt/homebrew",
	"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/ld.so.preload",
	"/etc/ssl", "/etc/ca-certificates", "/etc/ca-certificates.conf", "/etc/pki", "/etc/crypto-policies",
	"/etc/alternatives", "/etc/localtime", "/etc/timezone", "/etc/nsswitch.conf", "/etc/passwd", "/etc/group",
	"/etc/hosts", "/etc/host.conf", "/etc/resolv.conf", "/etc/gai.conf", "/etc/os-release", "/etc/mime.types",
	"/etc/locale.alias", "/etc/locale.conf", "/etc/default/locale", "/etc/gss", "/etc/python3", "/etc/npmrc",
	"/proc", "/sys/fs/cgroup", "/sys/devices/system/cpu", "/sys/devices/system/node",
	"/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom",
}

// DevWrite are the device files every sandbox may also write: writing to
// them stores nothing.
var DevWrite = []string{"/dev/null", "/dev/full"}

// homeRead are read beneath $HOME: the package caches a server installed
// with npm, pip or uv runs from. Never written.
var homeRead = []string{".npm", ".cache/pip", ".cache/uv", ".local/share/uv", ".nvm/versions", ".local/lib", ".volta", ".pyenv/versions"}

// Effective is the policy the launcher applies: the configured one plus
// the runtime defaults for the program (absolute, as found on PATH) and
// its arguments: the first existing file among them is the script (its
// node_modules tree or its directory), later ones are readable themselves.
// A directory argument adds nothing. home is mcp-guard's $HOME ("" for
// none).
func Effective(user Policy, program string, args []string, home string) Policy {
	p := user
	p.Read = slices.Clone(user.Read)
	p.Write = slices.Clone(user.Write)
	p.Read = append(p.Read, existing(systemRead)...)
	if home != "" {
		var hr []string
		for _, h := range homeRead {
			hr = append(hr, filepath.Join(home, h))
		}
		p.Read = append(p.Read, existing(hr)...)
	}
	p.Read = append(p.Read, narrow(programPaths(program), home)...)
	script := true
	for _, a := range args {
		if !filepath.IsAbs(a) {
			continue
		}
		if fi, err := os.Stat(a); err == nil && fi.Mode().IsRegular() {
			if script { // the first file named is the script the runtime runs
				p.Read = append(p.Read, narrow(scriptPaths(a), home)...)
				script = false
			} else {
				p.Read = append(p.Read, a)
			}
		}
	}
	return p.normalized()
}

// narrow keeps a default from granting a shared tree: a directory that is
// /, $HOME or above it, or a shared temporary directory is left out (a
// program or script there has its own file added instead, by the caller's
// list holding it).
func narrow(paths []string, home string) []string {
	var out []string
	for _, p := range paths {
		if broad(p, home) {
			continue
		}
		out = append(out, p)
	}
	return out
}

func broad(dir, home string) bool {
	switch dir {
	case "/", "/tmp", "/var/tmp", "/dev/shm", "/home", "/root", "/Users":
		return true
	}
	if home == "" {
		return false
	}
	rel, err := filepath.Rel(dir, home)
	return err == nil && !strings.HasPrefix(rel, "..") // dir is home or above it
}

// programPaths are what running program needs beyond the system: its own
// directory (link and target), and for a program in a bin directory its
// installation's lib (node_modules, site-packages) and a venv's
// pyvenv.cfg.
func programPaths(program string) []string {
	if program == "" {
		return nil
	}
	var out []string
	cands := []string{program}
	if real, err := filepath.EvalSymlinks(program); err == nil && real != program {
		cands = append(cands, real)
	}
	for _, c := range cands {
		dir := filepath.Dir(c)
		out = append(out, c, dir) // the file itself stays when its directory is too broad
		if filepath.Base(dir) == "bin" {
			prefix := filepath.Dir(dir)
			out = append(out, existing([]string{filepath.Join(prefix, "lib"), filepath.Join(prefix, "lib64"), filepath.Join(prefix, "pyvenv.cfg")})...)
		}
	}
	return out
}

// scriptPaths are what a script named in the arguments needs: under a
// node_modules tree, the outermost node_modules (its dependencies sit
// beside it); else its own directory.
func scriptPaths(file string) []string {
	dir := filepath.Dir(file)
	root := ""
	for d := dir; d != filepath.Dir(d); d = filepath.Dir(d) {
		if filepath.Base(d) == "node_modules" {
			root = d
		}
	}
	if root != "" {
		return []string{root}
	}
	return []string{file, dir}
}

func existing(paths []string) []string {
	var out []string
	for _, p := range paths {
		if _, err := os.Lstat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}
