// Command billing runs the billing service on its own (one Deployment in Kubernetes).
package main

import (
	"github.com/chorus-sms/chorus/pkg/process"
	"github.com/chorus-sms/chorus/pkg/registry"
	"github.com/chorus-sms/chorus/services/billing"
)

func main() { process.Main(registry.Billing.Name, billing.Setup) }
