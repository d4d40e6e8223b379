package servetest

import (
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ClosedAddr hands out distinct loopback ports below the ephemeral range that nothing
// listens on.
func TestClosedAddrIsFreeAndOutsideTheEphemeralRange(t *testing.T) {
	seen := map[string]bool{}
	for range 50 {
		addr := ClosedAddr(t)
		assert.False(t, seen[addr], "%s handed out twice", addr)
		seen[addr] = true
		_, p, err := net.SplitHostPort(addr)
		require.NoError(t, err)
		port, err := strconv.Atoi(p)
		require.NoError(t, err)
		assert.Less(t, port, 32768)
		_, err = net.DialTimeout("tcp", addr, time.Second)
		assert.Error(t, err, "nothing listens on %s", addr)
	}
}
