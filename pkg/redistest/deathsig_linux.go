package redistest

import (
	"os/exec"
	"syscall"
)

// dieWithParent has the kernel kill the server when the thread that started it ends, so a test
// binary that crashes or is killed does not leave it running.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
