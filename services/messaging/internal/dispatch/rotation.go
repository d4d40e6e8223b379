package dispatch

import (
	"context"

	"github.com/google/uuid"

	"github.com/chorus-sms/chorus/services/messaging/internal/carrier"
	"github.com/chorus-sms/chorus/services/messaging/internal/store"
)

// numberRefusals are the carrier error codes that blame the sending number, not the message
// or its recipient, with what each means: a campaign's or poll's number refused with one
// leaves that source's rotation and its queued messages move to the source's other numbers
// (store.LeaveRotation). A recipient's opt-out (Twilio 21610) or a bad recipient (21211,
// 30003, 30005, 30006) is no fault of the number and is not here. Every path that learns a
// carrier's code (its answer to a send, a status callback) reads this one list.
var numberRefusals = map[string]string{
	"30007": "carrier filtering",                   // Twilio: the carriers flagged the number's traffic
	"30032": "toll-free number not verified",       // Twilio
	"30034": "number not registered for A2P 10DLC", // Twilio: an unregistered US long code
	"21606": "the number cannot send SMS",          // Twilio: From is no SMS-capable number of the account
}

// refusesNumber reports whether a carrier's error code for m takes m's number out of its
// source's rotation, and why: only a campaign's or poll's, whose messages can move.
func refusesNumber(m store.Message, code string) (string, bool) {
	if m.SourceKind != store.SourceCampaign && m.SourceKind != store.SourcePoll {
		return "", false
	}
	what, ok := numberRefusals[code]
	if !ok {
		return "", false
	}
	return "carrier error " + code + ": " + what, true
}

// leaveRotation takes m's number out of its source's rotation for reason and moves the
// source's queued messages of that number, requeue (m, claimed, when it is to go again) among
// them, to the source's other numbers. It reports whether any number was left to take them;
// with none, m fails as the carrier answered.
func (d *Dispatcher) leaveRotation(ctx context.Context, m store.Message, reason string, requeue uuid.UUID) (bool, error) {
	left, err := d.store.LeaveRotation(context.WithoutCancel(ctx), m.OrgID, m.SourceKind, m.SourceID, m.OurNumber, reason, requeue)
	if err != nil {
		return false, err
	}
	d.log.WarnContext(ctx, "number left its source's rotation", "number", m.OurNumber, "source", m.SourceKind+":"+m.SourceID,
		"reason", reason, "numbers_left", left)
	if left > 0 {
		d.WakeExpander() // the moved batches may go from numbers with room
	}
	return left > 0, nil
}

// statusRefusesNumber takes a sent message's number out of its source's rotation when its
// status callback blames the number (the carrier took the message, then filtered it).
func (d *Dispatcher) statusRefusesNumber(ctx context.Context, m store.Message, s carrier.Status) {
	reason, ok := refusesNumber(m, s.ErrorCode)
	if !ok {
		return
	}
	if _, err := d.leaveRotation(ctx, m, reason, uuid.Nil); err != nil {
		d.log.ErrorContext(ctx, "take a refused number out of rotation", "message", m.ID, "err", err)
	}
}

// carrierTook says a message moving from before to status is one the carrier just took: it
// counts to its number's sent (store.CountSent) on whichever path learns it first, the
// carrier's answer or its status callback.
func carrierTook(before store.Message, status string) bool {
	leaving := before.Status == store.StatusQueued || before.Status == store.StatusSending
	return leaving && (status == carrier.StatusSent || status == carrier.StatusDelivered || status == carrier.StatusUndelivered)
}
