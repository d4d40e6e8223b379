package inbound

import orgsv1 "github.com/chorus-sms/chorus/proto/gen/go/orgs/v1"

// The automatic answers to keywords, as US carriers require them: name the sender, say what
// happened and how to undo it.

func optOutReply(o *orgsv1.Organization) string {
	return o.GetName() + ": You are unsubscribed and will receive no more messages. Reply START to resubscribe."
}

func optInReply(o *orgsv1.Organization) string {
	return o.GetName() + ": You are resubscribed. Reply STOP to unsubscribe, HELP for help."
}

func helpReply(o *orgsv1.Organization) string {
	if o.GetHelpText() != "" {
		return o.GetHelpText()
	}
	return o.GetName() + ": Reply to this message to reach us. Msg & data rates may apply. Reply STOP to unsubscribe."
}
