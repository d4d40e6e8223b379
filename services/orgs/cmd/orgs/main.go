// Command orgs runs the organizations service on its own (one Deployment in Kubernetes).
package main

import (
	_ "time/tzdata" // organization timezones are validated against the IANA database, present or not on the host

	"github.com/chorus-sms/chorus/pkg/process"
	"github.com/chorus-sms/chorus/pkg/registry"
	"github.com/chorus-sms/chorus/services/orgs"
)

func main() { process.Main(registry.Orgs.Name, orgs.Setup) }
