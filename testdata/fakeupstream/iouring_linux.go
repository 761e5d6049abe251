package fakeupstream

import (
	"syscall"
	"unsafe"
)

// ioURing creates an io_uring of one entry and closes it.
func ioURing() error {
	var params [120]byte                                                        // struct io_uring_params, zeroed
	fd, _, e := syscall.Syscall(425, 1, uintptr(unsafe.Pointer(&params[0])), 0) // io_uring_setup
	if e != 0 {
		return e
	}
	syscall.Close(int(fd))
	return nil
}
