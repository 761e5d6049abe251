//go:build !linux

package fakeupstream

import "errors"

func ioURing() error { return errors.New("not supported here") }
