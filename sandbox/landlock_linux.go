package sandbox

import (
	"errors"
	"fmt"

	"unsafe"

	"golang.org/x/sys/unix"
)

// Landlock's ABI (include/uapi/linux/landlock.h).
const (
	llCreateRulesetVersion = 1 << 0
	llRulePathBeneath      = 1
	llRuleNetPort          = 2

	llExecute    = 1 << 0
	llWriteFile  = 1 << 1
	llReadFile   = 1 << 2
	llReadDir    = 1 << 3
	llRemoveDir  = 1 << 4
	llRemoveFile = 1 << 5
	llMakeChar   = 1 << 6
	llMakeDir    = 1 << 7
	llMakeReg    = 1 << 8
	llMakeSock   = 1 << 9
	llMakeFifo   = 1 << 10
	llMakeBlock  = 1 << 11
	llMakeSym    = 1 << 12
	llRefer      = 1 << 13 // ABI 2
	llTruncate   = 1 << 14 // ABI 3
	llIoctlDev   = 1 << 15 // ABI 5

	llBindTCP    = 1 << 0 // ABI 4
	llConnectTCP = 1 << 1

	llScopeAbstractUnix = 1 << 0 // ABI 6
	llScopeSignal       = 1 << 1

	// What a file (not a directory) rule may carry.
	llFileAccess = llExecute | llWriteFile | llReadFile | llTruncate | llIoctlDev
)

type llRulesetAttr struct {
	handledFS  uint64
	handledNet uint64
	scoped     uint64
}

type llPathBeneath struct { // packed in the kernel: 12 bytes are read
	allowed  uint64
	parentFD int32
	_        int32
}

type llNetPort struct {
	allowed uint64
	port    uint64
}

// Probe is what this kernel can enforce: its Landlock ABI (0: none) and
// whether a seccomp filter can be installed for this architecture.
func Probe() (abi int, seccomp bool) {
	v, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, llCreateRulesetVersion)
	if e == 0 {
		abi = int(v)
	}
	_, err := unix.PrctlRetInt(unix.PR_GET_SECCOMP, 0, 0, 0, 0)
	return abi, err == nil && auditArch != 0
}

// fsAccess is every filesystem right the ABI knows.
func fsAccess(abi int) uint64 {
	if abi < 1 {
		return 0
	}
	a := uint64(llExecute | llWriteFile | llReadFile | llReadDir | llRemoveDir | llRemoveFile | llMakeChar |
		llMakeDir | llMakeReg | llMakeSock | llMakeFifo | llMakeBlock | llMakeSym)
	if abi >= 2 {
		a |= llRefer
	}
	if abi >= 3 {
		a |= llTruncate
	}
	if abi >= 5 {
		a |= llIoctlDev
	}
	return a
}

const readAccess = llExecute | llReadFile | llReadDir

// landlock restricts the calling thread (and what it execs) to p, with
// what ABI abi offers. It must run after no_new_privs is set.
func landlock(p Policy, abi int) error {
	if abi < 1 {
		return nil
	}
	handled := fsAccess(abi)
	attr := llRulesetAttr{handledFS: handled}
	size := unsafe.Sizeof(uint64(0))
	if abi >= 4 && p.Network.Mode != NetAll {
		attr.handledNet = llBindTCP | llConnectTCP
		size = 2 * unsafe.Sizeof(uint64(0))
	}
	if abi >= 6 {
		attr.scoped = llScopeAbstractUnix | llScopeSignal
		size = unsafe.Sizeof(attr)
	}
	fd, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), size, 0)
	if e != 0 {
		return fmt.Errorf("landlock: create ruleset (ABI %d): %w", abi, e)
	}
	defer unix.Close(int(fd))
	for _, d := range p.Read {
		if err := addPath(int(fd), d, readAccess&handled); err != nil {
			return err
		}
	}
	for _, d := range p.Write {
		if err := addPath(int(fd), d, handled); err != nil {
			return err
		}
	}
	for _, d := range DevWrite {
		if err := addPath(int(fd), d, (readAccess|llWriteFile|llTruncate)&handled); err != nil {
			return err
		}
	}
	if attr.handledNet != 0 && p.Network.Mode == NetPorts {
		for _, port := range p.Network.Connect {
			if err := addPort(int(fd), port, llConnectTCP); err != nil {
				return err
			}
		}
		for _, port := range p.Network.Bind {
			if err := addPort(int(fd), port, llBindTCP); err != nil {
				return err
			}
		}
	}
	if _, _, e := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, fd, 0, 0); e != 0 {
		return fmt.Errorf("landlock: restrict self: %w", e)
	}
	return nil
}

// addPath allows access beneath path; a path that does not exist is
// skipped (it grants nothing).
func addPath(rulesetFD int, path string, access uint64) error {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("landlock: open %s: %w", path, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("landlock: stat %s: %w", path, err)
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFDIR:
	case unix.S_IFREG, unix.S_IFCHR, unix.S_IFBLK:
		access &= llFileAccess
	default:
		return nil // a pipe or socket (e.g. /dev/stderr): Landlock has no rule for it
	}
	attr := llPathBeneath{allowed: access, parentFD: int32(fd)}
	if _, _, e := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(rulesetFD), llRulePathBeneath, uintptr(unsafe.Pointer(&attr)), 0, 0, 0); e != 0 {
		return fmt.Errorf("landlock: rule for %s: %w", path, e)
	}
	return nil
}

func addPort(rulesetFD int, port uint16, access uint64) error {
	attr := llNetPort{allowed: access, port: uint64(port)}
	if _, _, e := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(rulesetFD), llRuleNetPort, uintptr(unsafe.Pointer(&attr)), 0, 0, 0); e != 0 {
		return fmt.Errorf("landlock: rule for port %d: %w", port, e)
	}
	return nil
}
