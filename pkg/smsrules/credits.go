package smsrules

import "unicode/utf8"

// The spec's credit arithmetic for one message: 1 credit per started segment of 480
// characters of SMS text, 2 credits per MMS. Length is counted in characters (Unicode code
// points) of the text as it is sent, that is after merge fields are filled in and the text is
// normalized: the caller passes that final text. Messaging prices replies and campaigns
// estimate holds with it.
const (
	// SegmentLength is how many characters of SMS text one credit pays for.
	SegmentLength = 480
	// MMSCredits is the price of an MMS, whatever its text.
	MMSCredits = 2
)

// SMSCredits is the price of an SMS with the given final text: ceil(characters / 480), and 1
// for empty text, since a sent message is at least one segment. Invalid UTF-8 bytes count as
// one character each.
func SMSCredits(text string) int32 {
	n := utf8.RuneCountInString(text)
	if n == 0 {
		return 1
	}
	return int32((n + SegmentLength - 1) / SegmentLength)
}

// Credits is the price of a message: MMSCredits for an MMS, else SMSCredits(text).
func Credits(text string, mms bool) int32 {
	if mms {
		return MMSCredits
	}
	return SMSCredits(text)
}
