package server

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/chorus-sms/chorus/pkg/apierr"
	"github.com/chorus-sms/chorus/pkg/audience"
	"github.com/chorus-sms/chorus/pkg/mergefields"
	"github.com/chorus-sms/chorus/pkg/numberpool"
	"github.com/chorus-sms/chorus/pkg/quiethours"
	"github.com/chorus-sms/chorus/pkg/smsrules"
	pollsv1 "github.com/chorus-sms/chorus/proto/gen/go/polls/v1"
	"github.com/chorus-sms/chorus/services/polls/internal/engine"
	"github.com/chorus-sms/chorus/services/polls/internal/questions"
	"github.com/chorus-sms/chorus/services/polls/internal/store"
)

// Limits and defaults of a poll's fields (spec section 8 gives the name's; the rest are ours).
const (
	maxName             = 200
	defaultMaxReasks    = 1
	maxMaxReasks        = 5
	defaultTimeoutHours = 72
	maxTimeoutHours     = 720
)

// apply replaces p's fields with in's (create and the full update), adding every problem to
// f under its REST name.
func apply(p *store.Poll, in *pollsv1.PollInput, f apierr.Fields) {
	if in == nil {
		in = &pollsv1.PollInput{}
	}
	switch name := strings.TrimSpace(in.GetName()); {
	case name == "":
		f.Add("name", "is required")
	case utf8.RuneCountInString(name) > maxName:
		f.Add("name", fmt.Sprintf("must be at most %d characters", maxName))
	default:
		p.Name = name
	}
	p.IntroText = text(f, "introductoryText", in.GetIntroductoryText())
	p.OutroText = text(f, "outroText", in.GetOutroText())
	p.IntroMediaURL = media(f, "introMediaUrl", in.GetIntroMediaUrl(), p.IntroText, "introductoryText")
	p.OutroMediaURL = media(f, "outroMediaUrl", in.GetOutroMediaUrl(), p.OutroText, "outroText")
	p.Questions = make([]questions.Question, len(in.GetQuestions()))
	for i, q := range in.GetQuestions() {
		out := questions.Question{
			Number: int(q.GetQuestionNumber()), Text: strings.TrimSpace(q.GetText()), Type: q.GetType(),
			ResponseCode: strings.TrimSpace(q.GetResponseCode()),
		}
		for _, o := range q.GetOptions() {
			out.Options = append(out.Options, questions.Option{Code: strings.TrimSpace(o.GetCode()), Label: strings.TrimSpace(o.GetLabel())})
		}
		if b := q.GetBranchingLogic(); b != nil {
			out.Branching = &questions.Branching{Condition: strings.TrimSpace(b.GetCondition()), NextQuestion: int(b.GetNextQuestion())}
		}
		p.Questions[i] = out
	}
	questions.Validate(p.Questions, f)
	if len(p.Questions) > 0 && p.IntroText != "" {
		// The intro leaves with question 1 as one message: together they must fit.
		mergefields.CheckFits(f, "introductoryText", engine.IntroText(p, &p.Questions[0]), true, "sent with question 1 as one message, it")
	}
	p.CompletionTargetEnabled = in.GetCompletionTargetEnabled()
	p.CompletionTarget = nil
	if in.CompletionTarget != nil {
		t := in.GetCompletionTarget()
		if t <= 0 {
			f.Add("completionTarget", "must be a positive number")
		}
		p.CompletionTarget = &t
	} else if p.CompletionTargetEnabled {
		f.Add("completionTarget", "is required when completionTargetEnabled is true")
	}
	p.MaxReasks = defaultMaxReasks
	if in.MaxReasks != nil {
		if n := in.GetMaxReasks(); n < 0 || n > maxMaxReasks {
			f.Add("maxReasks", fmt.Sprintf("must be between 0 and %d", maxMaxReasks))
		} else {
			p.MaxReasks = n
		}
	}
	p.TimeoutHours = defaultTimeoutHours
	if in.ParticipantTimeoutHours != nil {
		if n := in.GetParticipantTimeoutHours(); n < 1 || n > maxTimeoutHours {
			f.Add("participantTimeoutHours", fmt.Sprintf("must be between 1 and %d", maxTimeoutHours))
		} else {
			p.TimeoutHours = n
		}
	}
	p.Timezone = zone(f, "timezone", in.GetTimezone(), p.Timezone)
}

// text is a poll text trimmed, refused when it fits no participant in one message.
func text(f apierr.Fields, field, s string) string {
	s = strings.TrimSpace(s)
	mergefields.CheckFits(f, field, s, true, "")
	return s
}

// media checks a media URL: public http(s), and sent with a text (messaging sends no empty
// body).
func media(f apierr.Fields, field, u, text, textField string) *string {
	if u = strings.TrimSpace(u); u == "" {
		return nil
	}
	if !smsrules.PublicMediaURL(u) {
		f.Add(field, "must be a public http(s) URL")
	}
	if text == "" {
		f.Add(field, "needs "+textField+" (the text the media is sent with)")
	}
	return &u
}

// zone is tz when given (an IANA name), else keep.
func zone(f apierr.Fields, field, tz string, keep *string) *string {
	if tz == "" {
		return keep
	}
	if !quiethours.ValidZone(tz) {
		f.Add(field, "must be an IANA timezone, e.g. America/Chicago")
		return keep
	}
	return &tz
}

// start is a start request checked: its audience (segment XOR filter), when, zone, and the
// number (nil: the default) or pool it sends from.
type start struct {
	segment *uuid.UUID
	filter  *audience.Filter
	at      *time.Time
	zone    *string
	from    *uuid.UUID
	pool    []uuid.UUID
}

func startInput(req *pollsv1.StartPollRequest, keepZone *string) (start, error) {
	f := apierr.Fields{}
	var s start
	hasSegment, hasFilter := req.GetSegmentId() != "", req.GetContactFilter() != nil
	switch {
	case hasSegment && hasFilter:
		f.Add("segmentId", "segmentId and contactFilter are mutually exclusive")
		f.Add("contactFilter", "segmentId and contactFilter are mutually exclusive")
	case !hasSegment && !hasFilter:
		f.Add("segmentId", "one of segmentId or contactFilter is required")
	case hasSegment:
		id, err := uuid.Parse(req.GetSegmentId())
		if err != nil {
			f.Add("segmentId", "must be a UUID")
		}
		s.segment = &id
	default:
		cf := req.GetContactFilter()
		s.filter = audience.Parse(f, "contactFilter", cf.GetTags(), cf.GetTagsLogic(), cf.GetAll())
	}
	if at := req.GetScheduledFor(); at != "" {
		t, err := time.Parse(time.RFC3339Nano, at)
		if err != nil {
			f.Add("scheduledFor", "must be an ISO 8601 date-time with a zone, e.g. 2026-05-01T15:00:00Z")
		} else {
			t = t.UTC()
			s.at = &t
		}
	}
	s.zone = zone(f, "timezone", req.GetTimezone(), keepZone)
	if req.FromPhoneNumberId != nil && req.FromPhoneNumberIds != nil {
		f.Add("fromPhoneNumberIds", "give fromPhoneNumberId or fromPhoneNumberIds, not both")
	}
	if req.FromPhoneNumberId != nil {
		if id, err := uuid.Parse(req.GetFromPhoneNumberId()); err != nil {
			f.Add("fromPhoneNumberId", "must be a phone number id (UUID)")
		} else {
			s.from = &id
		}
	}
	if req.FromPhoneNumberIds != nil {
		s.pool = numberpool.FromList(f, "fromPhoneNumberIds", req.GetFromPhoneNumberIds())
	}
	return s, f.Err()
}
