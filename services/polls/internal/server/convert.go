package server

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/chorus-sms/chorus/pkg/audience"
	"github.com/chorus-sms/chorus/pkg/nullable"
	pollsv1 "github.com/chorus-sms/chorus/proto/gen/go/polls/v1"
	"github.com/chorus-sms/chorus/services/polls/internal/questions"
	"github.com/chorus-sms/chorus/services/polls/internal/store"
)

func toPoll(p *store.Poll) *pollsv1.Poll {
	out := &pollsv1.Poll{
		Id:                      p.ID.String(),
		OrganizationId:          p.OrgID.String(),
		Name:                    p.Name,
		Status:                  p.Status,
		IntroductoryText:        p.IntroText,
		OutroText:               p.OutroText,
		IntroMediaUrl:           nullable.String(p.IntroMediaURL),
		OutroMediaUrl:           nullable.String(p.OutroMediaURL),
		Questions:               make([]*pollsv1.Question, len(p.Questions)),
		CompletionTargetEnabled: p.CompletionTargetEnabled,
		ScheduledFor:            nullable.Time(p.ScheduledFor),
		Timezone:                nullable.String(p.Timezone),
		CreatedAt:               timestamppb.New(p.CreatedAt),
		UpdatedAt:               timestamppb.New(p.UpdatedAt),
		MaxReasks:               p.MaxReasks,
		ParticipantTimeoutHours: p.TimeoutHours,
		SegmentId:               nullable.UUID(p.SegmentID),
		StartedAt:               nullable.Time(p.StartedAt),
		CompletedAt:             nullable.Time(p.CompletedAt),
		ParticipantCount:        p.ParticipantCount,
		CompletedCount:          p.CompletedCount,
		FailureReason:           nullable.String(p.FailureReason),
	}
	if p.CompletionTarget != nil {
		out.CompletionTarget = wrapperspb.Int32(*p.CompletionTarget)
	}
	if cf := p.ContactFilter; cf != nil {
		out.ContactFilter = &pollsv1.ContactFilter{Tags: cf.Tags, TagsLogic: cf.TagsLogic, All: audience.AllField(cf)}
	}
	for i, q := range p.Questions {
		pq := &pollsv1.Question{
			QuestionNumber: int32(q.Number), Text: q.Text, Type: q.Type, ResponseCode: q.ResponseCode,
			Options: optionList(q.Options),
		}
		if b := q.Branching; b != nil {
			pq.BranchingLogic = &pollsv1.BranchingLogic{Condition: b.Condition, NextQuestion: int32(b.NextQuestion)}
		}
		out.Questions[i] = pq
	}
	return out
}

// optionList is a question's options as the list the gateway prints, nil (the field left out)
// for a question without options: an open_ended one.
func optionList(opts []questions.Option) *structpb.ListValue {
	if len(opts) == 0 {
		return nil
	}
	out := &structpb.ListValue{Values: make([]*structpb.Value, len(opts))}
	for i, o := range opts {
		out.Values[i] = structpb.NewStructValue(&structpb.Struct{Fields: map[string]*structpb.Value{
			"code": structpb.NewStringValue(o.Code), "label": structpb.NewStringValue(o.Label),
		}})
	}
	return out
}

func toParticipant(p *store.Participant, rs []store.Response) *pollsv1.Participant {
	out := &pollsv1.Participant{
		ParticipantId:         p.ID.String(),
		ContactId:             p.ContactID.String(),
		FirstName:             p.FirstName,
		LastName:              p.LastName,
		Phone:                 p.Phone,
		Status:                p.Status,
		CurrentQuestionNumber: p.CurrentQuestion,
		StartedAt:             nullable.Time(p.StartedAt),
		CompletedAt:           nullable.Time(p.CompletedAt),
		ResponseCount:         p.ResponseCount,
		LastResponseAt:        nullable.Time(p.LastResponseAt),
		Responses:             make([]*pollsv1.Response, len(rs)),
	}
	if p.TerminationReason != nil {
		out.TerminationReason = *p.TerminationReason
	}
	for i, r := range rs {
		out.Responses[i] = &pollsv1.Response{
			QuestionNumber: r.QuestionNumber, ResponseCode: r.ResponseCode, Answer: r.Answer, OptionCode: r.OptionCode,
			ReceivedAt: timestamppb.New(r.ReceivedAt),
		}
	}
	return out
}

// structOf is m as the JSON object the gateway prints for it (every field, null when unset),
// for an answer whose shape depends on the outcome.
func structOf(m *pollsv1.Poll) (*structpb.Struct, error) {
	raw, err := protojson.MarshalOptions{EmitUnpopulated: true}.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("poll as JSON: %w", err)
	}
	var out structpb.Struct
	if err := protojson.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("poll as JSON: %w", err)
	}
	return &out, nil
}
