package carrier_test

import (
	"testing"

	"github.com/chorus-sms/chorus/services/messaging/internal/carrier"
	"github.com/chorus-sms/chorus/services/messaging/internal/carrier/carriertest"
)

// The sandbox takes every message; what becomes of it is told by the destination's last four
// digits, and its reports are the statuses SandboxOutcome lists.
func TestSandboxKeepsTheCarrierContract(t *testing.T) {
	carriertest.Run(t, carriertest.Harness{
		New: func(_ *testing.T, a carriertest.Answer) *carriertest.Carrier {
			if a != carriertest.Takes {
				return nil
			}
			return &carriertest.Carrier{Provider: carrier.Sandbox{}}
		},
		To: func(final string) string {
			return map[string]string{
				carrier.StatusDelivered: "+12025550143", carrier.StatusFailed: "+12025550006", carrier.StatusUndelivered: "+12025550007",
			}[final]
		},
		Reports: func(_ *testing.T, m carrier.Outgoing, acc carrier.Accepted, _ string) []carrier.Status {
			var out []carrier.Status
			for _, s := range carrier.SandboxOutcome(m.To) {
				out = append(out, carrier.Status{ProviderMessageID: acc.ProviderMessageID, Status: s})
			}
			return out
		},
	})
}
