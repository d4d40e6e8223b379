// Command webhooks runs the outbound webhooks service on its own (one Deployment in Kubernetes).
package main

import (
	"github.com/chorus-sms/chorus/pkg/process"
	"github.com/chorus-sms/chorus/pkg/registry"
	"github.com/chorus-sms/chorus/services/webhooks"
)

func main() { process.Main(registry.Webhooks.Name, webhooks.Setup) }
