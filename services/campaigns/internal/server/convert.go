package server

import (
	"maps"
	"slices"

	"github.com/google/uuid"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/chorus-sms/chorus/pkg/audience"
	"github.com/chorus-sms/chorus/pkg/nullable"
	campaignsv1 "github.com/chorus-sms/chorus/proto/gen/go/campaigns/v1"
	"github.com/chorus-sms/chorus/services/campaigns/internal/store"
)

func toCampaign(c *store.Campaign) *campaignsv1.Campaign {
	out := &campaignsv1.Campaign{
		Id:                         c.ID.String(),
		Name:                       c.Name,
		Status:                     c.Status,
		Channel:                    c.Channel,
		Message:                    c.Message,
		MediaUrl:                   nullable.String(c.MediaURL),
		SegmentId:                  nullable.UUID(c.SegmentID),
		FromPhoneNumberId:          idOrAbsent(c.FromPhoneNumberID),
		ScheduledFor:               nullable.Time(c.ScheduledFor),
		Timezone:                   nullable.String(c.Timezone),
		TotalCount:                 c.TotalCount,
		SentCount:                  c.SentCount,
		FailedCount:                c.FailedCount,
		QueuedCount:                c.QueuedCount(),
		DeliveryRate:               c.DeliveryRate(),
		ReplyCountExcludingOptouts: c.ReplyCount,
		ForceRoute:                 c.ForceRoute,
		NormalizeText:              c.NormalizeText,
		IsAbTest:                   c.IsAbTest,
		MessageVariantA:            deref(c.VariantA),
		MessageVariantB:            deref(c.VariantB),
		AbTestWaitMinutes:          c.AbTestWaitMinutes,
		AutoReplyEnabled:           c.AutoReplyEnabled,
		YesResponse:                deref(c.YesResponse),
		NoResponse:                 deref(c.NoResponse),
		FaqReplies:                 make([]*campaignsv1.FaqReply, len(c.FaqReplies)),
		CreatedAt:                  timestamppb.New(c.CreatedAt),
		UpdatedAt:                  timestamppb.New(c.UpdatedAt),
		CompletedAt:                nullable.Time(c.CompletedAt),
		CanceledAt:                 nullable.Time(c.CanceledAt),
		FailureReason:              nullable.String(c.FailureReason),
		DisplayMetrics: &campaignsv1.DisplayMetrics{
			AudienceSize: c.TotalCount, Sent: c.SentCount, Failed: c.FailedCount, Queued: c.QueuedCount(),
			Delivered: c.DeliveredCount, DeliveryRate: c.DeliveryRate(), Replies: c.ReplyCount, ClickCount: c.ClickCount,
			Unsent: unsent(c.Unsent), Skipped: c.SkippedCount,
		},
	}
	if cf := c.ContactFilter; cf != nil {
		out.ContactFilter = &campaignsv1.ContactFilter{Tags: cf.Tags, TagsLogic: cf.TagsLogic, All: audience.AllField(cf)}
	}
	for i, r := range c.FaqReplies {
		out.FaqReplies[i] = &campaignsv1.FaqReply{Question: r.Question, Answer: r.Answer}
	}
	out.FromPhoneNumberIds = make([]string, len(c.FromPhoneNumberIDs))
	for i, id := range c.FromPhoneNumberIDs {
		out.FromPhoneNumberIds[i] = id.String()
	}
	return out
}

// setVariantMetrics fills an A/B campaign's per-variant figures and winner (null until
// decided); before its samples are drawn, t is zero and so are they.
func setVariantMetrics(m *campaignsv1.DisplayMetrics, t *store.AbTest) {
	m.VariantA = &campaignsv1.VariantMetrics{Recipients: t.ARecipients, Sent: t.ASent, Replies: t.AReplies, ReplyRate: store.ReplyRate(t.AReplies, t.ASent)}
	m.VariantB = &campaignsv1.VariantMetrics{Recipients: t.BRecipients, Sent: t.BSent, Replies: t.BReplies, ReplyRate: store.ReplyRate(t.BReplies, t.BSent)}
	m.Winner = nullable.String(t.Winner)
}

func toListItem(c *store.Campaign) *campaignsv1.CampaignListItem {
	return &campaignsv1.CampaignListItem{
		Id:                         c.ID.String(),
		Name:                       c.Name,
		Status:                     c.Status,
		Channel:                    c.Channel,
		ScheduledFor:               nullable.Time(c.ScheduledFor),
		Timezone:                   nullable.String(c.Timezone),
		TotalCount:                 c.TotalCount,
		SentCount:                  c.SentCount,
		FailedCount:                c.FailedCount,
		QueuedCount:                c.QueuedCount(),
		DeliveryRate:               c.DeliveryRate(),
		ReplyCountExcludingOptouts: c.ReplyCount,
		Message:                    c.Message,
		MediaUrl:                   nullable.String(c.MediaURL),
		CreatedAt:                  timestamppb.New(c.CreatedAt),
		UpdatedAt:                  timestamppb.New(c.UpdatedAt),
		CompletedAt:                nullable.Time(c.CompletedAt),
	}
}

// deref gives "" for an unset value: fields the spec types as strings are never null.
func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// idOrAbsent leaves an unset id out of the answer (a proto3 optional field): the spec types
// fromPhoneNumberId a UUID, so neither "" nor null.
func idOrAbsent(u *uuid.UUID) *string {
	if u == nil {
		return nil
	}
	s := u.String()
	return &s
}

// unsent is the campaign's unsent recipients by reason, in reason order (a map would print
// in any order).
func unsent(byReason map[string]int32) []*campaignsv1.UnsentCount {
	out := make([]*campaignsv1.UnsentCount, 0, len(byReason))
	for _, reason := range slices.Sorted(maps.Keys(byReason)) {
		out = append(out, &campaignsv1.UnsentCount{Reason: reason, Count: byReason[reason]})
	}
	return out
}
