//go:build !unix

package fakeupstream

import "errors"

func signalParent() error { return errors.New("not supported here") }

func rawSocket(domain, typ, proto int) error { return errors.New("not supported here") }
