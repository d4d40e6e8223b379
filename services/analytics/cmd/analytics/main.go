// Command analytics runs the analytics service on its own (one Deployment in Kubernetes).
package main

import (
	_ "time/tzdata" // hours and days are bucketed in organizations' timezones

	"github.com/chorus-sms/chorus/pkg/process"
	"github.com/chorus-sms/chorus/pkg/registry"
	"github.com/chorus-sms/chorus/services/analytics"
)

func main() { process.Main(registry.Analytics.Name, analytics.Setup) }
