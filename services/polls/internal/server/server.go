// Package server implements chorus.polls.v1.PollsService: validation, tenancy, the poll state
// moves, and the mapping of store results to API errors.
package server

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/chorus-sms/chorus/pkg/apierr"
	"github.com/chorus-sms/chorus/pkg/clients"
	"github.com/chorus-sms/chorus/pkg/clients/contacts"
	"github.com/chorus-sms/chorus/pkg/clients/messaging"
	"github.com/chorus-sms/chorus/pkg/httpcode"
	"github.com/chorus-sms/chorus/pkg/resource"
	"github.com/chorus-sms/chorus/pkg/tenant"
	pollsv1 "github.com/chorus-sms/chorus/proto/gen/go/polls/v1"
	"github.com/chorus-sms/chorus/services/polls/internal/engine"
	"github.com/chorus-sms/chorus/services/polls/internal/store"
)

// Jobs queues a poll's background work inside the transaction that moves its state.
type Jobs interface {
	// StartTx runs (or catches up) the poll's start at at.
	StartTx(ctx context.Context, tx pgx.Tx, p *store.Poll, at time.Time) error
	// CloseTx completes the poll, terminating its participants in progress.
	CloseTx(ctx context.Context, tx pgx.Tx, org, poll uuid.UUID, cancel bool) error
}

// Config holds what the server needs.
type Config struct {
	Store     *store.Store
	Contacts  *contacts.Client
	Messaging *messaging.Client
	Jobs      Jobs
	// Now is the clock (tests); nil means time.Now.
	Now func() time.Time
}

// poll is the kind of record the server answers for.
var poll = resource.Kind{Name: "poll", Reason: apierr.ReasonPollNotFound, Missing: store.ErrNotFound}

// Server answers the PollsService RPCs.
type Server struct {
	pollsv1.UnimplementedPollsServiceServer
	cfg   Config
	moves resource.Moves[store.Poll]
}

// New returns a Server.
func New(cfg Config) *Server {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Server{cfg: cfg}
	s.moves = resource.Moves[store.Poll]{Kind: poll, InTx: cfg.Store.InTx, Lock: cfg.Store.Lock, State: sourceState, Tell: s.tellMessaging}
	return s
}

// immediateWindow: a scheduledFor at most this far ahead starts at once (spec section 8).
const immediateWindow = 30 * time.Second

// Participants page (spec section 8).
const (
	defaultParticipants = 100
	maxParticipants     = 500
)

// ListPolls lists the organization's polls, newest first.
func (s *Server) ListPolls(ctx context.Context, _ *pollsv1.ListPollsRequest) (*pollsv1.ListPollsResponse, error) {
	out, err := resource.List(ctx, s.cfg.Store.List, toPoll)
	if err != nil {
		return nil, err
	}
	return &pollsv1.ListPollsResponse{Polls: out}, nil
}

// GetPoll returns one poll with its questions and status.
func (s *Server) GetPoll(ctx context.Context, req *pollsv1.GetPollRequest) (*pollsv1.GetPollResponse, error) {
	p, err := resource.Get(ctx, poll, req.GetId(), s.cfg.Store.Get)
	if err != nil {
		return nil, err
	}
	return &pollsv1.GetPollResponse{Poll: toPoll(&p)}, nil
}

// CreatePoll validates and stores a poll in draft (201).
func (s *Server) CreatePoll(ctx context.Context, req *pollsv1.CreatePollRequest) (*pollsv1.CreatePollResponse, error) {
	org, err := tenant.RequireWrite(ctx)
	if err != nil {
		return nil, err
	}
	now := s.cfg.Now().UTC()
	p := store.Poll{ID: uuid.Must(uuid.NewV7()), OrgID: org, Status: store.StatusDraft, CreatedAt: now, UpdatedAt: now}
	f := apierr.Fields{}
	apply(&p, req.GetPoll(), f)
	if err := f.Err(); err != nil {
		return nil, err
	}
	if err := s.cfg.Store.InTx(ctx, func(tx pgx.Tx) error { return s.cfg.Store.Insert(ctx, tx, &p) }); err != nil {
		return nil, err
	}
	httpcode.Set(ctx, 201)
	return &pollsv1.CreatePollResponse{Poll: toPoll(&p)}, nil
}

// UpdatePoll replaces every field of a draft or paused poll (same validation as create); a
// paused poll's participants continue with the new questions, matched by questionNumber.
func (s *Server) UpdatePoll(ctx context.Context, req *pollsv1.UpdatePollRequest) (*pollsv1.UpdatePollResponse, error) {
	org, id, err := poll.Target(ctx, req.GetId())
	if err != nil {
		return nil, err
	}
	f := apierr.Fields{}
	apply(&store.Poll{}, req.GetPoll(), f) // the body's own problems, before anything is read
	if err := f.Err(); err != nil {
		return nil, err
	}
	var p store.Poll
	err = s.cfg.Store.InTx(ctx, func(tx pgx.Tx) error {
		if p, err = s.cfg.Store.Lock(ctx, tx, org, id); err != nil {
			return err
		}
		if p.Status != store.StatusDraft && p.Status != store.StatusPaused {
			return poll.InvalidMove("be updated", p.Status)
		}
		apply(&p, req.GetPoll(), apierr.Fields{})
		return s.cfg.Store.Save(ctx, tx, &p)
	})
	if err != nil {
		return nil, poll.StoreError(err)
	}
	return &pollsv1.UpdatePollResponse{Poll: toPoll(&p)}, nil
}

// StartPoll starts a draft: scheduledFor omitted or within 30 s starts at once (202 {id,
// status, message}); later schedules it (200 with the poll, scheduled). Unlike a campaign's, an
// immediate start outside 08:00-21:00 is no error (the spec's state table gives 202 and active):
// the poll's messages carry its zone (else the organization's) and each recipient's, and
// messaging holds them until both windows are open, as it holds campaigns' queued messages.
func (s *Server) StartPoll(ctx context.Context, req *pollsv1.StartPollRequest) (*pollsv1.StartPollResponse, error) {
	org, id, err := poll.Target(ctx, req.GetId())
	if err != nil {
		return nil, err
	}
	cur, err := s.cfg.Store.Get(ctx, org, id)
	if err != nil {
		return nil, poll.StoreError(err)
	}
	in, err := startInput(req, cur.Timezone)
	if err != nil {
		return nil, err
	}
	if in.segment != nil {
		if _, err := s.cfg.Contacts.Segment(ctx, org, in.segment.String()); errors.Is(err, clients.ErrNotFound) {
			return nil, apierr.Field("segmentId", "no such segment")
		} else if err != nil {
			return nil, fmt.Errorf("segment: %w", err)
		}
	}
	from, err := s.sender(ctx, org, &in)
	if err != nil {
		return nil, err
	}
	now := s.cfg.Now().UTC()
	immediate := in.at == nil || !in.at.After(now.Add(immediateWindow))
	var p store.Poll
	err = s.cfg.Store.InTx(ctx, func(tx pgx.Tx) error {
		if p, err = s.cfg.Store.Lock(ctx, tx, org, id); err != nil {
			return err
		}
		if p.Status != store.StatusDraft {
			return poll.InvalidMove("start", p.Status)
		}
		p.SegmentID, p.ContactFilter, p.Timezone, p.FromPhoneNumberID, p.FromPhoneNumberIDs = in.segment, in.filter, in.zone, &from, in.pool
		p.ScheduledFor, p.Run = in.at, p.Run+1
		at := now
		if immediate {
			p.Status, p.StartedAt = store.StatusActive, &now
		} else {
			p.Status, at = store.StatusScheduled, *in.at
		}
		if err := s.cfg.Store.Save(ctx, tx, &p); err != nil {
			return err
		}
		return s.cfg.Jobs.StartTx(ctx, tx, &p, at)
	})
	if err != nil {
		return nil, poll.StoreError(err)
	}
	if !immediate {
		body, err := structOf(toPoll(&p))
		if err != nil {
			return nil, err
		}
		return &pollsv1.StartPollResponse{Body: body}, nil
	}
	httpcode.Set(ctx, 202)
	return &pollsv1.StartPollResponse{Body: &structpb.Struct{Fields: map[string]*structpb.Value{
		"id":      structpb.NewStringValue(p.ID.String()),
		"status":  structpb.NewStringValue(p.Status),
		"message": structpb.NewStringValue("The poll started: the intro and first question are being sent to its audience."),
	}}}, nil
}

// sender is the number a start sends from: the pool's first number (each one checked to be
// the organization's: another organization's is a missing one, 400 naming it), the number
// named, or the organization's default.
func (s *Server) sender(ctx context.Context, org uuid.UUID, in *start) (uuid.UUID, error) {
	if len(in.pool) > 0 {
		f := apierr.Fields{}
		if err := s.cfg.Messaging.CheckPool(ctx, org, "fromPhoneNumberIds", in.pool, f); err != nil {
			return uuid.Nil, err
		}
		return in.pool[0], f.Err()
	}
	named := ""
	if in.from != nil {
		named = in.from.String()
	}
	n, err := s.cfg.Messaging.PhoneNumber(ctx, org, named)
	switch {
	case errors.Is(err, clients.ErrNotFound) && in.from != nil:
		return uuid.Nil, apierr.Field("fromPhoneNumberId", "no such phone number in the organization")
	case errors.Is(err, clients.ErrNotFound):
		return uuid.Nil, apierr.New(codes.InvalidArgument, apierr.ReasonNoFromNumber, "the organization has no default phone number to send the poll from")
	case err != nil:
		return uuid.Nil, fmt.Errorf("sending number: %w", err)
	}
	id, err := uuid.Parse(n.GetPhoneNumberId())
	if err != nil {
		return uuid.Nil, fmt.Errorf("sending number id %q: %w", n.GetPhoneNumberId(), err)
	}
	return id, nil
}

// PausePoll: active → paused. Messaging holds the poll's queued messages before the answer;
// replies are still recorded and participants keep their progress.
func (s *Server) PausePoll(ctx context.Context, req *pollsv1.PausePollRequest) (*pollsv1.PausePollResponse, error) {
	p, err := s.move(ctx, req.GetId(), "pause", []string{store.StatusActive},
		func(tx pgx.Tx, p *store.Poll) error {
			p.Status = store.StatusPaused
			return s.cfg.Store.Save(ctx, tx, p)
		})
	if err != nil {
		return nil, err
	}
	return &pollsv1.PausePollResponse{Poll: p}, nil
}

// ResumePoll: paused → active; messaging releases the held messages and each participant who
// answered meanwhile gets the next question (the start's catch-up job).
func (s *Server) ResumePoll(ctx context.Context, req *pollsv1.ResumePollRequest) (*pollsv1.ResumePollResponse, error) {
	p, err := s.move(ctx, req.GetId(), "resume", []string{store.StatusPaused},
		func(tx pgx.Tx, p *store.Poll) error {
			p.Status = store.StatusActive
			if err := s.cfg.Store.Save(ctx, tx, p); err != nil {
				return err
			}
			return s.cfg.Jobs.StartTx(ctx, tx, p, s.cfg.Now())
		})
	if err != nil {
		return nil, err
	}
	return &pollsv1.ResumePollResponse{Poll: p}, nil
}

// ClosePoll: active, paused or scheduled → completed. The poll's queued messages are withdrawn
// before the answer, participants in progress are terminated, the hold's rest is released.
func (s *Server) ClosePoll(ctx context.Context, req *pollsv1.ClosePollRequest) (*pollsv1.ClosePollResponse, error) {
	p, err := s.move(ctx, req.GetId(), "close", []string{store.StatusActive, store.StatusPaused, store.StatusScheduled},
		func(tx pgx.Tx, p *store.Poll) error {
			if err := s.cfg.Jobs.CloseTx(ctx, tx, p.OrgID, p.ID, true); err != nil {
				return err
			}
			now, err := s.cfg.Store.Lock(ctx, tx, p.OrgID, p.ID)
			*p = now
			return err
		})
	if err != nil {
		return nil, err
	}
	return &pollsv1.ClosePollResponse{Poll: p}, nil
}

// move applies a state move (apply saves the poll) when the poll's status is one of from, as
// s.moves does: messaging is told the poll's new source state (sourceState).
func (s *Server) move(ctx context.Context, rawID, verb string, from []string, apply func(pgx.Tx, *store.Poll) error) (*pollsv1.Poll, error) {
	p, err := s.moves.Move(ctx, rawID, func(tx pgx.Tx, p *store.Poll) error {
		if !slices.Contains(from, p.Status) {
			return poll.InvalidMove(verb, p.Status)
		}
		return apply(tx, p)
	})
	if err != nil {
		return nil, err
	}
	return toPoll(&p), nil
}

// tellMessaging sets the state of the poll's queued messages in messaging.
func (s *Server) tellMessaging(ctx context.Context, org, id uuid.UUID, state string) error {
	if err := s.cfg.Messaging.SetSourceState(ctx, org, engine.SourceKind, id.String(), state); err != nil {
		return fmt.Errorf("messaging source state: %w", err)
	}
	return nil
}

// sourceState is the state messaging keeps the queued messages of a poll in p's status: held
// while paused, withdrawn for good once completed, sent otherwise.
func sourceState(p *store.Poll) string {
	switch p.Status {
	case store.StatusPaused:
		return messaging.SourcePaused
	case store.StatusCompleted:
		return messaging.SourceCanceled
	}
	return messaging.SourceActive
}

// ListParticipants lists a poll's participants (status filter, search on first name, last
// name or phone, limit default 100, max 500), oldest first.
func (s *Server) ListParticipants(ctx context.Context, req *pollsv1.ListParticipantsRequest) (*pollsv1.ListParticipantsResponse, error) {
	org, err := tenant.Org(ctx)
	if err != nil {
		return nil, err
	}
	id, err := poll.ID(req.GetId())
	if err != nil {
		return nil, err
	}
	f := apierr.Fields{}
	filter := store.ParticipantFilter{Status: req.GetStatus(), Search: req.GetSearch(), Limit: defaultParticipants}
	switch filter.Status {
	case "", store.NotStarted, store.InProgress, store.Completed, store.Terminated:
	default:
		f.Add("status", "must be not_started, in_progress, completed or terminated")
	}
	if req.Limit != nil {
		if l := req.GetLimit(); l < 1 || l > maxParticipants {
			f.Add("limit", fmt.Sprintf("must be between 1 and %d", maxParticipants))
		} else {
			filter.Limit = int(l)
		}
	}
	if err := f.Err(); err != nil {
		return nil, err
	}
	p, err := s.cfg.Store.Get(ctx, org, id)
	if err != nil {
		return nil, poll.StoreError(err)
	}
	ps, responses, err := s.cfg.Store.Participants(ctx, org, id, filter)
	if err != nil {
		return nil, err
	}
	out := &pollsv1.ListParticipantsResponse{
		Poll:         &pollsv1.PollSummary{Id: p.ID.String(), Name: p.Name, Status: p.Status, QuestionCount: int32(len(p.Questions))},
		Participants: make([]*pollsv1.Participant, len(ps)),
	}
	for i := range ps {
		out.Participants[i] = toParticipant(&ps[i], responses[ps[i].ID])
	}
	return out, nil
}
