//go:build unix

package fakeupstream

import (
	"os"
	"syscall"
)

// signalParent sends signal 0 (the permission check alone) to the parent.
func signalParent() error { return syscall.Kill(os.Getppid(), 0) }

// rawSocket calls socket(2) with exactly these arguments.
func rawSocket(domain, typ, proto int) error {
	fd, err := syscall.Socket(domain, typ, proto)
	if err == nil {
		syscall.Close(fd)
	}
	return err
}
