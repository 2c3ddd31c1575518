package syssort

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes sort end if this process dies (kill -9): no sort
// goes on writing into a work directory a later run uses.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
