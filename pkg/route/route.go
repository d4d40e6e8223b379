// Package route decides whether a message goes as SMS or MMS. One rule for every path that
// sends (campaigns, their test copies and auto-replies, polls, conversation replies), so the
// route a customer asks for, the message's is_mms and its price never disagree:
//
//   - media present: MMS, whatever forceRoute says (a mediaUrl means MMS);
//   - forceRoute MMS: MMS, with or without media (the carrier is asked to send the text as an
//     MMS: Twilio's SendAsMms);
//   - forceRoute SMS (without media): SMS;
//   - forceRoute AUTO (the default): MMS when the text needs it, else SMS.
//
// The text needs MMS when, sent as SMS, it would cost more than an MMS: more than
// smsrules.MMSCredits segments of smsrules.SegmentLength characters, that is more than 960
// characters of final text (after merge fields, normalization and link shortening). Such a
// text would reach the handset as a chain of seven or more carrier segments; one MMS carries
// it whole for 2 credits. So under AUTO a message never costs more than 2 credits unless a
// customer forces SMS.
package route

import (
	"strings"

	"github.com/chorus-sms/chorus/pkg/smsrules"
)

// The values of forceRoute.
const (
	Auto = "AUTO"
	SMS  = "SMS"
	MMS  = "MMS"
)

// AutoMMSLength is the longest text, in characters, that AUTO sends as SMS (960).
const AutoMMSLength = smsrules.SegmentLength * smsrules.MMSCredits

// Invalid is the message of a forceRoute that is none of the three.
const Invalid = "must be AUTO, SMS or MMS"

// Parse returns the route named by s, case-insensitively; "" is Auto. ok is false for any
// other value.
func Parse(s string) (r string, ok bool) {
	switch r = strings.ToUpper(s); r {
	case "":
		return Auto, true
	case Auto, SMS, MMS:
		return r, true
	}
	return "", false
}

// IsMMS reports whether a message goes as MMS: route is a parsed forceRoute ("" is Auto),
// media whether it carries any, text its final text.
func IsMMS(route string, media bool, text string) bool {
	switch {
	case media || route == MMS:
		return true
	case route == SMS:
		return false
	}
	return smsrules.SMSCredits(text) > smsrules.MMSCredits
}

// Price is the message's route and credits under the rule: (IsMMS, smsrules.Credits).
func Price(route string, media bool, text string) (mms bool, price int32) {
	mms = IsMMS(route, media, text)
	return mms, smsrules.Credits(text, mms)
}
