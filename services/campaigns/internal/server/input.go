package server

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/chorus-sms/chorus/pkg/apierr"
	"github.com/chorus-sms/chorus/pkg/audience"
	"github.com/chorus-sms/chorus/pkg/mergefields"
	"github.com/chorus-sms/chorus/pkg/numberpool"
	"github.com/chorus-sms/chorus/pkg/quiethours"
	"github.com/chorus-sms/chorus/pkg/route"
	"github.com/chorus-sms/chorus/pkg/smsrules"
	campaignsv1 "github.com/chorus-sms/chorus/proto/gen/go/campaigns/v1"
	"github.com/chorus-sms/chorus/services/campaigns/internal/store"
)

// Limits of a campaign's fields (spec section 8 gives the FAQ limit; the rest are ours).
const (
	maxName        = 200
	maxFaqReplies  = 5
	maxAbTestWait  = 1440
	defaultAbWait  = 60
	channelText    = "text"
	faqRepliesName = "faqReplies"
)

// newCampaign is a campaign with the defaults of a field that is not sent.
func newCampaign(org uuid.UUID, now time.Time) store.Campaign {
	return store.Campaign{
		ID: uuid.Must(uuid.NewV7()), OrgID: org, Status: store.StatusDraft, Channel: channelText,
		ForceRoute: route.Auto, NormalizeText: true, AbTestWaitMinutes: defaultAbWait,
		FaqReplies: []store.FaqReply{}, CreatedAt: now, UpdatedAt: now,
	}
}

// input is the campaign of a request; an empty body leaves it nil, which is an input with no
// field sent (so the usual rules answer it, not a nil dereference).
func input(in *campaignsv1.CampaignInput) *campaignsv1.CampaignInput {
	if in == nil {
		return &campaignsv1.CampaignInput{}
	}
	return in
}

// apply copies the sent fields of in onto c, checking each field's own format; rules that
// involve several fields or the whole campaign are complete's. Sending segmentId clears
// contactFilter and the other way round (they are exclusive); "" clears an optional text
// field.
func apply(c *store.Campaign, in *campaignsv1.CampaignInput, f apierr.Fields) {
	if in == nil {
		return
	}
	if in.Name != nil {
		name := strings.TrimSpace(in.GetName())
		switch {
		case name == "":
			f.Add("name", "must not be empty")
		case utf8.RuneCountInString(name) > maxName:
			f.Add("name", fmt.Sprintf("must be at most %d characters", maxName))
		}
		c.Name = name
	}
	if in.Message != nil {
		c.Message = in.GetMessage()
	}
	hasSegment := in.GetSegmentId() != ""
	if hasSegment && in.GetContactFilter() != nil {
		f.Add("segmentId", "segmentId and contactFilter are mutually exclusive")
		f.Add("contactFilter", "segmentId and contactFilter are mutually exclusive")
	}
	if in.SegmentId != nil {
		c.SegmentID = optionalID(f, "segmentId", in.GetSegmentId())
		if hasSegment {
			c.ContactFilter = nil
		}
	}
	if cf := in.GetContactFilter(); cf != nil {
		c.ContactFilter = audience.Parse(f, "contactFilter", cf.GetTags(), cf.GetTagsLogic(), cf.GetAll())
		if !hasSegment {
			c.SegmentID = nil
		}
	}
	if in.FromPhoneNumberId != nil && in.FromPhoneNumberIds != nil {
		f.Add("fromPhoneNumberIds", "give fromPhoneNumberId or fromPhoneNumberIds, not both")
	}
	if in.FromPhoneNumberId != nil {
		c.FromPhoneNumberID = optionalID(f, "fromPhoneNumberId", in.GetFromPhoneNumberId())
		c.FromPhoneNumberIDs = nil
	}
	if in.FromPhoneNumberIds != nil {
		c.FromPhoneNumberIDs = numberpool.FromList(f, "fromPhoneNumberIds", in.GetFromPhoneNumberIds())
		if len(c.FromPhoneNumberIDs) > 0 {
			first := c.FromPhoneNumberIDs[0]
			c.FromPhoneNumberID = &first
		}
	}
	if in.ScheduledFor != nil {
		c.ScheduledFor = nil
		if s := in.GetScheduledFor(); s != "" {
			t, err := time.Parse(time.RFC3339Nano, s)
			if err != nil {
				f.Add("scheduledFor", "must be an ISO 8601 date-time with a zone, e.g. 2026-05-01T15:00:00Z")
			} else {
				t = t.UTC()
				c.ScheduledFor = &t
			}
		}
	}
	if in.Timezone != nil {
		c.Timezone = nil
		if tz := in.GetTimezone(); tz != "" {
			if !quiethours.ValidZone(tz) {
				f.Add("timezone", "must be an IANA timezone, e.g. America/Chicago")
			}
			c.Timezone = &tz
		}
	}
	if in.MediaUrl != nil {
		c.MediaURL = nil
		if u := in.GetMediaUrl(); u != "" {
			if !smsrules.PublicMediaURL(u) {
				f.Add("mediaUrl", "must be a public http(s) URL")
			}
			c.MediaURL = &u
		}
	}
	if in.ForceRoute != nil {
		// Any of the three goes with or without media: pkg/route decides each message's route.
		if r, ok := route.Parse(in.GetForceRoute()); ok {
			c.ForceRoute = r
		} else {
			f.Add("forceRoute", route.Invalid)
		}
	}
	if in.Channel != nil {
		if in.GetChannel() != channelText {
			f.Add("channel", "only text is supported")
		}
	}
	if in.NormalizeText != nil {
		c.NormalizeText = in.GetNormalizeText()
	}
	if in.IsAbTest != nil {
		c.IsAbTest = in.GetIsAbTest()
	}
	if in.MessageVariantA != nil {
		c.VariantA = optionalText(in.GetMessageVariantA())
	}
	if in.MessageVariantB != nil {
		c.VariantB = optionalText(in.GetMessageVariantB())
	}
	if in.AbTestWaitMinutes != nil {
		if w := in.GetAbTestWaitMinutes(); w < 0 || w > maxAbTestWait {
			f.Add("abTestWaitMinutes", fmt.Sprintf("must be between 0 and %d", maxAbTestWait))
		} else {
			c.AbTestWaitMinutes = w
		}
	}
	if in.AutoReplyEnabled != nil {
		c.AutoReplyEnabled = in.GetAutoReplyEnabled()
	}
	if in.YesResponse != nil {
		c.YesResponse = optionalText(in.GetYesResponse())
	}
	if in.NoResponse != nil {
		c.NoResponse = optionalText(in.GetNoResponse())
	}
	if in.FaqReplies != nil {
		c.FaqReplies = faqReplies(f, in.GetFaqReplies())
	}
	checkLengths(c, f)
}

// checkLengths refuses a text of the campaign that fits no recipient in one message
// (smsrules.MaxTextLength with every merge field empty), checked after every field is applied so
// normalizeText is the one the send will use. A recipient whose own rendering is too long is
// the send's matter: it gets nothing and is counted (see fanout).
func checkLengths(c *store.Campaign, f apierr.Fields) {
	texts := map[string]*string{"message": &c.Message, "messageVariantA": c.VariantA, "messageVariantB": c.VariantB,
		"yesResponse": c.YesResponse, "noResponse": c.NoResponse}
	for field, t := range texts {
		if t != nil {
			mergefields.CheckFits(f, field, *t, c.NormalizeText, "")
		}
	}
	for i, r := range c.FaqReplies {
		mergefields.CheckFits(f, fmt.Sprintf("%s[%d].answer", faqRepliesName, i), r.Answer, c.NormalizeText, "")
	}
}

// complete checks what a campaign must hold to be submitted (spec section 4).
func complete(c *store.Campaign, f apierr.Fields) {
	if c.Name == "" {
		f.Add("name", "is required")
	}
	if strings.TrimSpace(c.Message) == "" {
		f.Add("message", "is required")
	}
	if c.SegmentID == nil && c.ContactFilter == nil {
		f.Add("segmentId", "one of segmentId or contactFilter is required")
	}
	// A draft stored before empty filters were refused must not reach everyone either.
	audience.Check(f, "contactFilter", c.ContactFilter)
	if c.IsAbTest {
		if c.VariantA == nil {
			f.Add("messageVariantA", "is required when isAbTest is true")
		}
		if c.VariantB == nil {
			f.Add("messageVariantB", "is required when isAbTest is true")
		}
	}
	if c.AutoReplyEnabled && c.YesResponse == nil && c.NoResponse == nil && len(c.FaqReplies) == 0 {
		f.Add("autoReplyEnabled", "needs yesResponse, noResponse or faqReplies")
	}
}

func optionalID(f apierr.Fields, field, s string) *uuid.UUID {
	if s == "" {
		return nil
	}
	id, err := uuid.Parse(s)
	if err != nil {
		f.Add(field, "must be a UUID")
		return nil
	}
	return &id
}

func optionalText(s string) *string {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	return &s
}

// checkLength refuses a text longer than one message carries as it is sent (a test copy's
// body once its preview data is merged).
func checkLength(f apierr.Fields, field, s string) {
	if n := utf8.RuneCountInString(s); n > smsrules.MaxTextLength {
		f.Add(field, fmt.Sprintf("is %d characters once merged; one message carries at most %d", n, smsrules.MaxTextLength))
	}
}

func faqReplies(f apierr.Fields, list *structpb.ListValue) []store.FaqReply {
	items := list.GetValues()
	if len(items) > maxFaqReplies {
		f.Add(faqRepliesName, fmt.Sprintf("at most %d items", maxFaqReplies))
		return nil
	}
	out := make([]store.FaqReply, 0, len(items))
	for i, v := range items {
		field := fmt.Sprintf("%s[%d]", faqRepliesName, i)
		obj := v.GetStructValue()
		if obj == nil {
			f.Add(field, "must be an object {question, answer}")
			continue
		}
		var r store.FaqReply
		for k, val := range obj.GetFields() {
			s, ok := val.GetKind().(*structpb.Value_StringValue)
			switch {
			case k != "question" && k != "answer":
				f.Add(field+"."+k, "unknown field")
			case !ok || strings.TrimSpace(s.StringValue) == "":
				f.Add(field+"."+k, "must be a non-empty string")
			case k == "question":
				r.Question = s.StringValue
			default:
				r.Answer = s.StringValue
			}
		}
		if r.Question == "" {
			f.Add(field+".question", "is required")
		}
		if r.Answer == "" {
			f.Add(field+".answer", "is required")
		}
		out = append(out, r)
	}
	return out
}
