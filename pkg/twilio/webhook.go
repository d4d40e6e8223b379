package twilio

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/chorus-sms/chorus/pkg/phone"
)

// Limits of the fields Twilio's webhooks carry. They are generous for real traffic and
// keep what a signed but hostile form can put into a stored row, an index or a thread key.
const (
	// maxMedia is the most media Twilio attaches to one message.
	maxMedia = 10
	// maxSIDLen bounds a message sid (Twilio's are 34 characters).
	maxSIDLen = 64
	// maxAddressLen bounds From and To before they are read as phone numbers.
	maxAddressLen = 32
	// MaxInboundBody is the longest text accepted, in characters: Twilio concatenates at most
	// 1,600.
	MaxInboundBody = 1600
	// maxMediaURLLen bounds one media URL.
	maxMediaURLLen = 2048
	// maxErrorCodeLen bounds a status callback's error code (Twilio's have five digits).
	maxErrorCodeLen = 10
)

// FieldError is a webhook field that is missing or out of bounds; Field is its form name.
type FieldError struct {
	Field, Reason string
}

func (e *FieldError) Error() string { return e.Field + " " + e.Reason }

// Inbound is a message Twilio received for one of our numbers.
type Inbound struct {
	MessageSID, From, To, Body string
	MediaURLs                  []string
}

// ParseInbound reads the form of Twilio's incoming-message webhook. Call it only after the
// request's signature has been checked (ValidSignature). From must be a phone number or a
// short code, To a phone number; both are returned as sent.
func ParseInbound(form url.Values) (Inbound, error) {
	in := Inbound{
		MessageSID: firstOf(form, "MessageSid", "SmsSid"),
		From:       form.Get("From"),
		To:         form.Get("To"),
		Body:       form.Get("Body"),
	}
	if err := checkSID(in.MessageSID); err != nil {
		return Inbound{}, err
	}
	if !validAddress(in.From) || (!IsShortCode(in.From) && !isPhone(in.From)) {
		return Inbound{}, &FieldError{"From", "must be a phone number or a short code"}
	}
	if !validAddress(in.To) || !isPhone(in.To) {
		return Inbound{}, &FieldError{"To", "must be a phone number"}
	}
	if !utf8.ValidString(in.Body) || utf8.RuneCountInString(in.Body) > MaxInboundBody {
		return Inbound{}, &FieldError{"Body", fmt.Sprintf("must be UTF-8 text of at most %d characters", MaxInboundBody)}
	}
	n := 0
	if s := form.Get("NumMedia"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n < 0 || n > maxMedia {
			return Inbound{}, &FieldError{"NumMedia", fmt.Sprintf("must be 0 to %d", maxMedia)}
		}
	}
	for i := range n {
		name := "MediaUrl" + strconv.Itoa(i)
		u := form.Get(name)
		if !validMediaURL(u) {
			return Inbound{}, &FieldError{name, fmt.Sprintf("must be an http(s) URL of at most %d characters", maxMediaURLLen)}
		}
		in.MediaURLs = append(in.MediaURLs, u)
	}
	return in, nil
}

// StatusCallback is Twilio's message status callback for a message we sent.
type StatusCallback struct {
	MessageSID string
	Status     string // Twilio's message status, as sent
	ErrorCode  string // Twilio's error code, empty when none
}

// ParseStatusCallback reads the form of Twilio's message status callback. Call it only after
// the request's signature has been checked.
func ParseStatusCallback(form url.Values) (StatusCallback, error) {
	st := StatusCallback{
		MessageSID: firstOf(form, "MessageSid", "SmsSid"),
		Status:     firstOf(form, "MessageStatus", "SmsStatus"),
		ErrorCode:  form.Get("ErrorCode"),
	}
	if err := checkSID(st.MessageSID); err != nil {
		return StatusCallback{}, err
	}
	if st.Status == "" {
		return StatusCallback{}, &FieldError{"MessageStatus", "is required"}
	}
	if strings.Trim(st.ErrorCode, "0123456789") != "" || len(st.ErrorCode) > maxErrorCodeLen {
		return StatusCallback{}, &FieldError{"ErrorCode", "must be a number"}
	}
	return st, nil
}

// checkSID accepts a message sid of letters and digits (Twilio's "SM" and 32 hex
// digits), bounded so it fits the unique index it is stored under.
func checkSID(sid string) error {
	if sid == "" || len(sid) > maxSIDLen || strings.Trim(sid, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789") != "" {
		return &FieldError{"MessageSid", fmt.Sprintf("must be 1 to %d letters and digits", maxSIDLen)}
	}
	return nil
}

func validAddress(s string) bool { return s != "" && len(s) <= maxAddressLen }

func isPhone(s string) bool {
	_, err := phone.Normalize(s)
	return err == nil
}

// IsShortCode reports whether s is a short code: 3 to 8 digits, as carriers send them.
func IsShortCode(s string) bool {
	return len(s) >= 3 && len(s) <= 8 && strings.Trim(s, "0123456789") == ""
}

func validMediaURL(s string) bool {
	if s == "" || len(s) > maxMediaURLLen {
		return false
	}
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != ""
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
