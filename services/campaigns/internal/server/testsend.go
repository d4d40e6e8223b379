package server

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/chorus-sms/chorus/pkg/apierr"
	"github.com/chorus-sms/chorus/pkg/clients"
	"github.com/chorus-sms/chorus/pkg/mergefields"
	"github.com/chorus-sms/chorus/pkg/phone"
	"github.com/chorus-sms/chorus/pkg/smsrules"
	campaignsv1 "github.com/chorus-sms/chorus/proto/gen/go/campaigns/v1"
	contactsv1 "github.com/chorus-sms/chorus/proto/gen/go/contacts/v1"
	messagingv1 "github.com/chorus-sms/chorus/proto/gen/go/messaging/v1"
	"github.com/chorus-sms/chorus/services/campaigns/internal/shortlinks"
)

// Bounds of test sends, which cost nothing: recipients of one call, media of one copy (a
// campaign's one mediaUrl), and copies an organization sends per UTC day.
const (
	maxTestRecipients = 10
	maxTestMedia      = 1
	testSendsPerDay   = 100
)

// Test-send outcomes of one recipient.
const (
	testSent    = "sent"
	testRefused = "refused"
	// testSourceKind is messaging's source kind of a test copy: free, sent whatever the hour,
	// counted by no campaign (its events and replies are not the campaign's).
	testSourceKind = "test"
)

// TestSend sends a test copy of a campaign (any status) to up to 10 numbers (any US format,
// normalized to E.164) at once: quiet hours do not apply, it costs nothing and counts in no
// metric. An opted-out number is refused (reported, nothing sent) while the others go; the
// check is made here and again by messaging right before the carrier. Being free, the copy
// keeps a real message's limits (text, one media URL) and each organization has
// testSendsPerDay copies per UTC day (429 TEST_SEND_LIMIT_REACHED past them).
func (s *Server) TestSend(ctx context.Context, req *campaignsv1.TestSendRequest) (*campaignsv1.TestSendResponse, error) {
	org, id, err := campaign.Target(ctx, req.GetId())
	if err != nil {
		return nil, err
	}
	c, err := s.cfg.Store.Get(ctx, org, id)
	if err != nil {
		return nil, campaign.StoreError(err)
	}
	f := apierr.Fields{}
	recipients := testRecipients(f, req.GetRecipients())
	if len(req.GetMediaUrls()) > maxTestMedia {
		f.Add("mediaUrls", fmt.Sprintf("at most %d media URL, as a campaign's message", maxTestMedia))
	}
	for i, u := range req.GetMediaUrls() {
		if !smsrules.PublicMediaURL(u) {
			f.Add(fmt.Sprintf("mediaUrls[%d]", i), "must be a public http(s) URL")
		}
	}
	from := optionalID(f, "fromPhoneNumberId", req.GetFromPhoneNumberId())
	body := req.GetBody()
	mergefields.CheckFits(f, "body", body, c.NormalizeText, "")
	if body == "" {
		body = c.Message
	}
	body = mergefields.Preview(body, req.GetMergePreviewData(), c.NormalizeText)
	if strings.TrimSpace(body) == "" {
		f.Add("body", "required: the campaign has no message")
	}
	checkLength(f, "body", body) // with the preview data merged
	if err := f.Err(); err != nil {
		return nil, err
	}
	if from == nil {
		from = c.FromPhoneNumberID
	}
	fromID := ""
	if from != nil {
		fromID = from.String()
	}
	// Another organization's number is answered as a missing one.
	switch _, err := s.cfg.Messaging.PhoneNumber(ctx, org, fromID); {
	case errors.Is(err, clients.ErrNotFound) && fromID == "":
		return nil, apierr.Field("fromPhoneNumberId", "the organization has no default phone number; name one")
	case errors.Is(err, clients.ErrNotFound):
		return nil, apierr.Field("fromPhoneNumberId", "no such phone number in the organization")
	case err != nil:
		return nil, fmt.Errorf("sending number: %w", err)
	}

	checks, err := s.cfg.Contacts.CheckSendable(ctx, org, recipients)
	if err != nil {
		return nil, fmt.Errorf("check opt-outs: %w", err)
	}
	optedOut := map[string]bool{}
	for _, r := range checks {
		if r.GetReason() == contactsv1.SendableReason_SENDABLE_REASON_OPTED_OUT {
			optedOut[r.GetPhone()] = true
		}
	}
	now, copies := s.cfg.Now(), len(recipients)-len(optedOut)
	if copies > 0 {
		switch ok, err := s.cfg.Store.TakeTestSends(ctx, org, now, copies, testSendsPerDay); {
		case err != nil:
			return nil, err
		case !ok:
			tomorrow := now.UTC().Truncate(24 * time.Hour).Add(24 * time.Hour)
			return nil, apierr.LimitReached(apierr.ReasonTestSendLimit,
				fmt.Sprintf("the organization's %d test copies of the day (UTC) are used up", testSendsPerDay), tomorrow.Sub(now))
		}
	}
	queued := false
	defer func() {
		// Refused before messaging queued them, or by it: the copies are not spent (a give-back
		// that fails leaves them spent, which costs the organization nothing but copies).
		if copies > 0 && !queued {
			_ = s.cfg.Store.GiveBackTestSends(context.WithoutCancel(ctx), org, now, copies)
		}
	}()
	// Shortened as the campaign's texts are, so the tester sees what recipients get, under
	// links of the test copies: their clicks count for no campaign.
	if copies > 0 {
		texts := []string{body}
		if err := shortlinks.New(s.cfg.Messaging, org, testSourceKind, c.ID).Rewrite(ctx, texts); err != nil {
			return nil, err
		}
		body = texts[0]
	}
	results := make([]*campaignsv1.TestSendResult, len(recipients))
	var msgs []*messagingv1.OutgoingMessage
	var sentIdx []int
	for i, to := range recipients {
		results[i] = &campaignsv1.TestSendResult{To: to, Status: testSent}
		if optedOut[to] {
			results[i].Status, results[i].Reason = testRefused, apierr.ReasonContactOptedOut
			continue
		}
		msgs = append(msgs, &messagingv1.OutgoingMessage{
			DedupeKey:         "test:" + c.ID.String() + ":" + uuid.NewString(),
			To:                to,
			Body:              body,
			MediaUrls:         req.GetMediaUrls(),
			ForceRoute:        c.ForceRoute, // the campaign's, so the copy goes as its messages do
			FromPhoneNumberId: fromID,
			SourceKind:        testSourceKind,
			SourceId:          c.ID.String(),
		})
		sentIdx = append(sentIdx, i)
	}
	if len(msgs) > 0 {
		ids, err := s.cfg.Messaging.SendMessages(ctx, org, msgs)
		if perr := clients.Payment(err); perr != nil {
			return nil, perr // a suspended account: the 402 its replies get
		}
		if err != nil {
			return nil, fmt.Errorf("queue test copies: %w", err)
		}
		queued = true
		for k, i := range sentIdx {
			results[i].MessageId = ids[k]
		}
	}
	return &campaignsv1.TestSendResponse{Results: results}, nil
}

// testRecipients checks a test send's recipients (1 to 10 numbers in any US format, as
// everywhere else) into f and returns them in E.164 without repeats, in order.
func testRecipients(f apierr.Fields, in []string) []string {
	if len(in) == 0 || len(in) > maxTestRecipients {
		f.Add("recipients", fmt.Sprintf("must hold 1 to %d phone numbers", maxTestRecipients))
		return nil
	}
	seen := map[string]bool{}
	var out []string
	for i, r := range in {
		n, err := phone.Normalize(r)
		if err != nil {
			f.Add(fmt.Sprintf("recipients[%d]", i), "must be a phone number such as +12025550143 or (202) 555-0143")
			continue
		}
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}
