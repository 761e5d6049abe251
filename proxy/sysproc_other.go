//go:build !linux

package proxy

import "syscall"

// sysProcAttr puts the child in its own process group.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
