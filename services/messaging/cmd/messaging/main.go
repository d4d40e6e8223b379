// Command messaging runs the messaging service on its own (one Deployment in Kubernetes).
package main

import (
	_ "time/tzdata" // quiet hours are computed in organization timezones, present or not on the host

	"github.com/chorus-sms/chorus/pkg/process"
	"github.com/chorus-sms/chorus/pkg/registry"
	"github.com/chorus-sms/chorus/services/messaging"
)

func main() { process.Main(registry.Messaging.Name, messaging.Setup) }
