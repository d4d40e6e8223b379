package carrier

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// maxTwilioMedia is the most media Twilio attaches to one message.
const maxTwilioMedia = 10

// ParseTwilioInbound reads the form of Twilio's incoming-message webhook. Call it only after
// the request's signature has been checked.
func ParseTwilioInbound(form url.Values) (Inbound, error) {
	in := Inbound{
		ProviderMessageID: firstOf(form, "MessageSid", "SmsSid"),
		From:              form.Get("From"),
		To:                form.Get("To"),
		Body:              form.Get("Body"),
	}
	if in.ProviderMessageID == "" || in.From == "" || in.To == "" {
		return Inbound{}, errors.New("twilio inbound: MessageSid, From and To are required")
	}
	n := 0
	if s := form.Get("NumMedia"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n < 0 || n > maxTwilioMedia {
			return Inbound{}, fmt.Errorf("twilio inbound %s: NumMedia %q is not 0 to %d", in.ProviderMessageID, s, maxTwilioMedia)
		}
	}
	for i := range n {
		u := form.Get("MediaUrl" + strconv.Itoa(i))
		if u == "" {
			return Inbound{}, fmt.Errorf("twilio inbound %s: NumMedia is %d but MediaUrl%d is missing", in.ProviderMessageID, n, i)
		}
		in.MediaURLs = append(in.MediaURLs, u)
	}
	return in, nil
}

// ParseTwilioStatus reads the form of Twilio's message status callback and normalizes the
// status to one of the Status* constants.
func ParseTwilioStatus(form url.Values) (Status, error) {
	st := Status{
		ProviderMessageID: firstOf(form, "MessageSid", "SmsSid"),
		ErrorCode:         form.Get("ErrorCode"),
	}
	if st.ProviderMessageID == "" {
		return Status{}, errors.New("twilio status: MessageSid is required")
	}
	raw := firstOf(form, "MessageStatus", "SmsStatus")
	var err error
	if st.Status, err = normalizeTwilioStatus(raw); err != nil {
		return Status{}, fmt.Errorf("twilio status %s: %w", st.ProviderMessageID, err)
	}
	if strings.Trim(st.ErrorCode, "0123456789") != "" {
		return Status{}, fmt.Errorf("twilio status %s: ErrorCode %q is not a number", st.ProviderMessageID, st.ErrorCode)
	}
	return st, nil
}

// normalizeTwilioStatus maps Twilio's message statuses onto ours. Statuses of inbound messages
// (receiving, received) have no place in a callback for a message we sent.
func normalizeTwilioStatus(s string) (string, error) {
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
		return "", fmt.Errorf("unexpected message status %q", s)
	}
}

// firstOf returns the first non-empty value among names; Twilio sends some fields under both
// a current and a legacy name.
func firstOf(form url.Values, names ...string) string {
	for _, n := range names {
		if v := form.Get(n); v != "" {
			return v
		}
	}
	return ""
}
