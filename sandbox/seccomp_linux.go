package sandbox

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Offsets in struct seccomp_data; arguments are read by their low 32 bits
// (amd64 and arm64 are little-endian).
const (
	sdNr   = 0
	sdArch = 4
	sdArg0 = 16
	sdArg1 = 24
	sdArg2 = 32
)

// socketFilter is the seccomp program for a network mode: socket() is
// refused with EACCES except, for NetPorts, TCP over IPv4/IPv6 (Landlock
// then decides the port), UDP when udp is set, and netlink (interface
// lists); io_uring, which creates sockets without socket(), is refused
// with EPERM; a syscall of another architecture (i386, x32) is refused.
// For NetAll there is no filter.
func socketFilter(n Network) []unix.SockFilter {
	if n.Mode == NetAll {
		return nil
	}
	type jump struct{ t, f string } // labels
	var prog []unix.SockFilter
	labels := map[string]int{}
	var fix []struct {
		at   int
		j    jump
		kval uint32
	}
	stmt := func(code uint16, k uint32) { prog = append(prog, unix.SockFilter{Code: code, K: k}) }
	jeq := func(k uint32, t, f string) {
		fix = append(fix, struct {
			at   int
			j    jump
			kval uint32
		}{len(prog), jump{t, f}, k})
		prog = append(prog, unix.SockFilter{Code: unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K, K: k})
	}
	label := func(name string) { labels[name] = len(prog) }
	ld := func(off uint32) { stmt(unix.BPF_LD|unix.BPF_W|unix.BPF_ABS, off) }
	ret := func(v uint32) { stmt(unix.BPF_RET|unix.BPF_K, v) }

	ld(sdArch)
	jeq(auditArch, "", "eperm")
	ld(sdNr)
	if x32Bit != 0 {
		stmt(unix.BPF_JMP|unix.BPF_JGE|unix.BPF_K, x32Bit) // jt 0 jf 0 patched below
		prog[len(prog)-1].Jt, prog[len(prog)-1].Jf = 0, 1
		ret(unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM))
	}
	jeq(unix.SYS_IO_URING_SETUP, "eperm", "")
	jeq(unix.SYS_SOCKET, "", "allow")
	if n.Mode == NetPorts {
		ld(sdArg0)
		jeq(unix.AF_NETLINK, "allow", "")
		jeq(unix.AF_INET, "inet", "")
		jeq(unix.AF_INET6, "inet", "eacces")
		label("inet")
		ld(sdArg1)
		stmt(unix.BPF_ALU|unix.BPF_AND|unix.BPF_K, 0xf) // SOCK_TYPE_MASK: drop SOCK_NONBLOCK, SOCK_CLOEXEC
		jeq(unix.SOCK_STREAM, "tcp", "")
		if n.UDP {
			jeq(unix.SOCK_DGRAM, "udp", "eacces")
		} else {
			ret(unix.SECCOMP_RET_ERRNO | uint32(unix.EACCES))
		}
		label("tcp")
		ld(sdArg2)
		jeq(0, "allow", "")
		jeq(unix.IPPROTO_TCP, "allow", "eacces")
		if n.UDP {
			label("udp")
			ld(sdArg2)
			jeq(0, "allow", "")
			jeq(unix.IPPROTO_UDP, "allow", "eacces")
		}
	}
	label("eacces")
	ret(unix.SECCOMP_RET_ERRNO | uint32(unix.EACCES))
	label("eperm")
	ret(unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM))
	label("allow")
	ret(unix.SECCOMP_RET_ALLOW)

	for _, f := range fix {
		resolve := func(l string) uint8 {
			if l == "" {
				return 0
			}
			return uint8(labels[l] - f.at - 1)
		}
		prog[f.at].Jt, prog[f.at].Jf = resolve(f.j.t), resolve(f.j.f)
	}
	return prog
}

// installSeccomp installs the filter on the calling thread; no_new_privs
// must be set.
func installSeccomp(n Network) error {
	prog := socketFilter(n)
	if prog == nil {
		return nil
	}
	fp := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if _, _, e := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, 0, uintptr(unsafe.Pointer(&fp))); e != 0 {
		return fmt.Errorf("seccomp: install filter: %w", e)
	}
	return nil
}
