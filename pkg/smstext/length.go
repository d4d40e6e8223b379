package smstext

// MaxLength is the most characters one outgoing text may have once it is final (merge fields
// filled in, normalized, links shortened). Replies were always capped at it; every other text
// (campaigns, their auto-replies and test copies, polls) is held to the same limit, so no
// recipient is sent a giant SMS billed by the dozen segments.
const MaxLength = 1600
