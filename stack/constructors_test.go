package stack

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/chorus-sms/chorus/pkg/registry"
)

// A registry row without a constructor would not be started by `make run` or the e2e tests,
// and a constructor without a row would never run.
func TestEveryServiceHasAConstructor(t *testing.T) {
	named := map[string]bool{}
	for _, svc := range registry.All {
		named[svc.Name] = true
		assert.Contains(t, constructors, svc.Name, "registry service %s has no constructor", svc.Name)
	}
	for name := range constructors {
		assert.True(t, named[name], "constructor %s has no registry row", name)
	}
}
