// Command gateway runs the REST gateway on its own (one Deployment in Kubernetes).
package main

import (
	"github.com/chorus-sms/chorus/gateway"
	"github.com/chorus-sms/chorus/pkg/process"
	"github.com/chorus-sms/chorus/pkg/registry"
)

func main() { process.Main(registry.Gateway.Name, gateway.Setup) }
