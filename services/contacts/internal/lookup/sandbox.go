package lookup

import (
	"context"
	"errors"
	"strings"
)

// Sandbox answers by the number's last four digits, so every outcome can be produced on
// purpose in local use and tests: 0002 is a landline, 0003 fails every time, anything else is
// a mobile.
type Sandbox struct{}

// errSandboxUnavailable is the sandbox's always-failing lookup (numbers ending in 0003).
var errSandboxUnavailable = errors.New("sandbox lookup: provider unavailable (numbers ending in 0003 always fail)")

// Textable implements Provider.
func (Sandbox) Textable(_ context.Context, e164 string) (bool, error) {
	switch {
	case strings.HasSuffix(e164, "0002"):
		return false, nil
	case strings.HasSuffix(e164, "0003"):
		return false, errSandboxUnavailable
	}
	return true, nil
}
