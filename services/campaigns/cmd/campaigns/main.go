// Command campaigns runs the campaigns service on its own (one Deployment in Kubernetes).
package main

import (
	_ "time/tzdata" // quiet hours are computed in campaign and organization timezones

	"github.com/chorus-sms/chorus/pkg/process"
	"github.com/chorus-sms/chorus/pkg/registry"
	"github.com/chorus-sms/chorus/services/campaigns"
)

func main() { process.Main(registry.Campaigns.Name, campaigns.Setup) }
