//go:build !linux

package redistest

import "os/exec"

// dieWithParent is Linux only; elsewhere Close is what stops the server.
func dieWithParent(*exec.Cmd) {}
