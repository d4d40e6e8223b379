package dispatch

import (
	"context"
	"time"

	"github.com/google/uuid"
)

// handOffPoll is how often AwaitHandOffs looks again for a hand-off still in flight.
const handOffPoll = 5 * time.Millisecond

// AwaitHandOffs returns once no message to phone can reach the carrier having passed its
// consent check before the opt-out the caller just recorded in contacts. The caller
// acknowledges the opt-out only then, so that nothing is handed to the carrier after a STOP
// was answered.
//
// Every hand-off is recorded "sending" (claimed, or stored so as a reply) before its recipient's
// consent is read, and is over by its dispatch time plus the call timeout. So a hand-off
// this look does not see is either over or was recorded after the opt-out, and then its
// consent check finds the opt-out; one it sees is waited for, up to the call timeout (a
// reply's dispatch time is known only in process, and a "sending" message whose carrier answer
// was lost looks in flight until then).
func (d *Dispatcher) AwaitHandOffs(ctx context.Context, org uuid.UUID, phone string) error {
	deadline := time.Now().Add(d.callTimeout + throttleLead)
	for {
		inFlight, err := d.store.HandOffInFlight(ctx, org, phone, time.Now().Add(-d.callTimeout))
		if err != nil || !inFlight {
			return err
		}
		if time.Now().After(deadline) {
			d.log.WarnContext(ctx, "opt-out acknowledged with a message to its phone still sending", "org", org, "phone", phone)
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(handOffPoll):
		}
	}
}
