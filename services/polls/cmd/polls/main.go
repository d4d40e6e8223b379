// Command polls runs the polls service on its own (one Deployment in Kubernetes).
package main

import (
	_ "time/tzdata" // quiet hours are computed in poll and organization timezones

	"github.com/chorus-sms/chorus/pkg/process"
	"github.com/chorus-sms/chorus/pkg/registry"
	"github.com/chorus-sms/chorus/services/polls"
)

func main() { process.Main(registry.Polls.Name, polls.Setup) }
