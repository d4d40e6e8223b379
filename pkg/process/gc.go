package process

import (
	"os"
	"runtime/debug"
)

// DefaultGCPercent is the collector's target (GOGC) of a Chorus process whose operator set
// none. A service keeps a small live heap (pools, caches, a batch or two) and allocates per
// request and per message, so at Go's default of 100 it collects many times a second under
// load and marking becomes a visible share of every request's CPU. A larger target trades
// some tens of megabytes for far fewer cycles; where memory is bounded, GOMEMLIMIT (the
// Kubernetes manifests set it below the container's limit) makes the collector run sooner.
const DefaultGCPercent = 400

// TuneGC applies DefaultGCPercent unless GOGC is set.
func TuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(DefaultGCPercent)
	}
}
