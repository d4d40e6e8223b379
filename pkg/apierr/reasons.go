package apierr

import "slices"

// Every reason code Chorus answers with, in one list: services put them in ErrorInfo.Reason,
// the gateway writes them as the REST error's code, and messaging stores the carrier and
// billing ones as a message's errorCode. A code is part of the API: never rename one.
const (
	// Common to every service and the gateway.
	ReasonValidation         = "VALIDATION_FAILED"
	ReasonNotFound           = "NOT_FOUND"
	ReasonConflict           = "CONFLICT"
	ReasonInternal           = "INTERNAL"
	ReasonUnauthenticated    = "UNAUTHENTICATED"
	ReasonForbidden          = "FORBIDDEN"
	ReasonFailedPrecondition = "FAILED_PRECONDITION"
	ReasonCanceled           = "CANCELED"
	ReasonUnavailable        = "UNAVAILABLE"
	ReasonDeadlineExceeded   = "DEADLINE_EXCEEDED"

	// The gateway's own refusals.
	ReasonRateLimited          = "RATE_LIMITED"
	ReasonPayloadTooLarge      = "PAYLOAD_TOO_LARGE"
	ReasonMethodNotAllowed     = "METHOD_NOT_ALLOWED"
	ReasonUnsupportedMediaType = "UNSUPPORTED_MEDIA_TYPE"
	ReasonIdempotencyKeyInUse  = "IDEMPOTENCY_KEY_IN_USE" // 409: the key's first request is still running
	ReasonIdempotencyKeyReused = "IDEMPOTENCY_KEY_REUSED" // 422: the key was used with another request

	// Payment: billing answers them, services that spend credits pass them on in their own
	// words, and the gateway answers both with 402 Payment Required.
	ReasonInsufficientCredits = "INSUFFICIENT_CREDITS"
	ReasonBillingSuspended    = "BILLING_SUSPENDED"

	// Billing's refusals to post against a hold, which the services that post (for a
	// campaign's messages) tell apart; HOLD_NOT_FOUND is messaging's name for a missing hold.
	ReasonHoldExhausted = "HOLD_EXHAUSTED"
	ReasonHoldReleased  = "HOLD_RELEASED"
	ReasonHoldNotFound  = "HOLD_NOT_FOUND"

	// Contacts.
	ReasonContactNotFound     = "CONTACT_NOT_FOUND"
	ReasonSegmentLimitReached = "SEGMENT_LIMIT_REACHED"

	// Messaging: replies (spec section 7) and webhooks.
	ReasonContactOptedOut      = "CONTACT_OPTED_OUT"
	ReasonContactNonTextable   = "CONTACT_NON_TEXTABLE"
	ReasonContactLookupPending = "CONTACT_LOOKUP_PENDING"
	ReasonNoFromNumber         = "NO_FROM_NUMBER"
	ReasonInvalidSignature     = "INVALID_SIGNATURE"
	// 409: the organization already has the sign-up keyword (in any case).
	ReasonKeywordTaken = "KEYWORD_TAKEN"

	// Messaging: why a message failed before or at the carrier (its errorCode).
	ReasonCarrierUnavailable    = "CARRIER_UNAVAILABLE"
	ReasonCarrierMisconfigured  = "CARRIER_MISCONFIGURED"
	ReasonCarrierOutcomeUnknown = "CARRIER_OUTCOME_UNKNOWN"
	ReasonNotSendable           = "NOT_SENDABLE"
	ReasonSourceCanceled        = "SOURCE_CANCELED" // its campaign or poll was canceled first
	// A campaign message not sent because its recipient was sent a campaign message within
	// the organization's frequency cap: skipped, neither sent nor failed, and free.
	ReasonFrequencyCapped = "FREQUENCY_CAPPED"

	// Campaigns.
	ReasonInvalidState = "INVALID_STATE" // 409: a move the campaign's or poll's status does not allow
	ReasonQuietHours   = "QUIET_HOURS"   // 400: an immediate send outside 08:00-21:00 of its zone
	// 429: the organization's test copies of the UTC day are used up (Retry-After: the next day).
	ReasonTestSendLimit = "TEST_SEND_LIMIT_REACHED"
	// Why a campaign failed (its failureReason), besides INSUFFICIENT_CREDITS and
	// BILLING_SUSPENDED: its segment was deleted before the send began; an A/B test's audience
	// gives empty 5% samples (fewer than 20 sendable recipients).
	ReasonSegmentNotFound    = "SEGMENT_NOT_FOUND"
	ReasonAbAudienceTooSmall = "AB_TEST_AUDIENCE_TOO_SMALL"

	// Polls (INVALID_STATE as for campaigns; a poll started at night is no QUIET_HOURS error,
	// its messages wait for the window).
	ReasonPollNotFound = "POLL_NOT_FOUND" // 404: no such poll in the organization
)

// withdrawnCodes are the errorCodes of failed messages messaging withdrew before the carrier
// saw them (Withdrawn).
var withdrawnCodes = []string{ReasonSourceCanceled, ReasonContactNotFound, ReasonContactOptedOut, ReasonFrequencyCapped}

// Withdrawn says a failed message's errorCode means messaging withdrew it before the carrier
// saw it (its campaign or poll canceled, its contact deleted or opted out meanwhile): it was
// never sent, so the services that count messages count it neither as sent nor as failed.
func Withdrawn(code string) bool {
	return slices.Contains(withdrawnCodes, code)
}

// Skipped says a failed message's errorCode means messaging skipped it for the organization's
// frequency cap: withdrawn (Withdrawn is true), and counted by a campaign as skipped.
func Skipped(code string) bool {
	return code == ReasonFrequencyCapped
}

// WithdrawnCodes are the codes Withdrawn recognizes, for a query that leaves such messages
// out (a thread shows none of them).
func WithdrawnCodes() []string {
	return slices.Clone(withdrawnCodes)
}
