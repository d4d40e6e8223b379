package gateway

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// Every route durableRoutes names is a POST route of the contract, so a renamed route cannot
// silently lose its durable keys.
func TestDurableRoutesArePosts(t *testing.T) {
	t.Parallel()
	for route := range durableRoutes {
		assert.Contains(t, strings.Split(allowedMethods(route), ", "), "POST", route)
	}
}
