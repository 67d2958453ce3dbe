//go:build !linux

package testproc

import "os/exec"

// DieWithParent does nothing outside Linux, which alone has a parent-death signal; the tests' Cleanup
// still kills what they started.
func DieWithParent(*exec.Cmd) {}
