package testproc

import (
	"os/exec"
	"syscall"
)

// DieWithParent has the kernel kill cmd's process when the test process that starts it ends, whichever
// way it ends. A test's Cleanup kills what it started, but a fuzz worker is ended without its cleanups
// (and so is a test killed by its timeout): the redis-servers a fuzz target started outlived every
// `make test`, one pair per fuzzed package.
func DieWithParent(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
