package process

import (
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestTuneGCKeepsAnOperatorsGOGC(t *testing.T) {
	prev := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(prev) })

	t.Setenv("GOGC", "150")
	debug.SetGCPercent(150)
	TuneGC()
	assert.Equal(t, 150, debug.SetGCPercent(150), "GOGC given: left as the runtime read it")

	t.Setenv("GOGC", "")
	TuneGC()
	assert.Equal(t, DefaultGCPercent, debug.SetGCPercent(100), "GOGC not given: the process default")
}
