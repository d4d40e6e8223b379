package twilio

import "errors"

// The five stages of a message Twilio sent, into which NormalizeStatus folds its statuses,
// in the order a message moves through them.
const (
	StatusQueued      = "queued"
	StatusSent        = "sent"
	StatusDelivered   = "delivered"
	StatusUndelivered = "undelivered"
	StatusFailed      = "failed"
)

// NormalizeStatus folds Twilio's message statuses into the five stages. Statuses of inbound
// messages (receiving, received) have no place in the status of a message we sent.
func NormalizeStatus(s string) (string, error) {
	switch s {
	case "accepted", "scheduled", "queued", "sending":
		return StatusQueued, nil
	case "sent":
		return StatusSent, nil
	case "delivered", "read":
		return StatusDelivered, nil
	case "undelivered":
		return StatusUndelivered, nil
	case "failed", "canceled":
		return StatusFailed, nil
	default:
		return "", errors.New("is not a known message status")
	}
}
