// Command contacts runs the contacts service on its own (one Deployment in Kubernetes).
package main

import (
	_ "time/tzdata" // contact timezones are validated against the IANA database, present or not on the host

	"github.com/chorus-sms/chorus/pkg/process"
	"github.com/chorus-sms/chorus/pkg/registry"
	"github.com/chorus-sms/chorus/services/contacts"
)

func main() { process.Main(registry.Contacts.Name, contacts.Setup) }
