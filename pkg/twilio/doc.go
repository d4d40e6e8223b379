// Package twilio is Twilio as Chorus speaks to it, in Twilio's own terms: the Messages API
// (send a message, list the messages sent), the webhooks Twilio calls (incoming messages and
// status callbacks) and their X-Twilio-Signature, and Lookup v2's line type. Messaging adapts
// it to its carrier interface and contacts to its lookup provider; the fake Twilio servers of
// the tests answer with its ServeList, Accept and Refuse, so both sides agree on one reading.
package twilio
