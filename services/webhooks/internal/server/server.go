// Package server is the webhooks gRPC API: an organization's endpoints and their deliveries.
package server

import (
	"context"
	"net/http"
	"slices"
	"strconv"

	"github.com/google/uuid"
	"google.golang.org/protobuf/types/known/timestamppb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/chorus-sms/chorus/pkg/apierr"
	"github.com/chorus-sms/chorus/pkg/httpcode"
	"github.com/chorus-sms/chorus/pkg/resource"
	"github.com/chorus-sms/chorus/pkg/tenant"
	webhooksv1 "github.com/chorus-sms/chorus/proto/gen/go/webhooks/v1"
	"github.com/chorus-sms/chorus/services/webhooks/internal/egress"
	"github.com/chorus-sms/chorus/services/webhooks/internal/signature"
	"github.com/chorus-sms/chorus/services/webhooks/internal/store"
)

// Limits of the API.
const (
	maxURLLength      = 2048
	defaultDeliveries = 50
	maxDeliveries     = 200
)

// Retrier makes a delivery pending again and queues its attempt (deliver.Runner).
type Retrier interface {
	Retry(ctx context.Context, org, endpoint, id uuid.UUID) (store.Delivery, error)
}

// Config is what the server works with.
type Config struct {
	Store   *store.Store
	Retrier Retrier
	Policy  egress.Policy
	// Types are the event types an endpoint may subscribe to.
	Types []string
}

// Server implements webhooksv1.WebhooksServiceServer.
type Server struct {
	webhooksv1.UnimplementedWebhooksServiceServer
	cfg Config
}

// New returns a Server over cfg.
func New(cfg Config) *Server { return &Server{cfg: cfg} }

var (
	endpointKind = resource.Kind{Name: "webhook", Reason: apierr.ReasonNotFound, Missing: store.ErrNotFound}
	deliveryKind = resource.Kind{Name: "delivery", Reason: apierr.ReasonNotFound, Missing: store.ErrNotFound}
)

// CreateEndpoint validates the URL (its host must resolve to allowed addresses) and the event
// types, and answers the endpoint with its secret.
func (s *Server) CreateEndpoint(ctx context.Context, req *webhooksv1.CreateEndpointRequest) (*webhooksv1.CreateEndpointResponse, error) {
	org, err := tenant.RequireWrite(ctx)
	if err != nil {
		return nil, err
	}
	fields := apierr.Fields{}
	switch {
	case req.GetUrl() == "":
		fields.Add("url", "is required")
	case len(req.GetUrl()) > maxURLLength:
		fields.Add("url", "must be at most "+strconv.Itoa(maxURLLength)+" characters")
	default:
		if msg, ok := s.cfg.Policy.CheckURL(ctx, req.GetUrl()); !ok {
			fields.Add("url", msg)
		}
	}
	events := req.GetEvents()
	if len(events) == 0 {
		fields.Add("events", "must name at least one event type")
	}
	for i, e := range events {
		if !slices.Contains(s.cfg.Types, e) {
			fields.Add("events["+strconv.Itoa(i)+"]", "unknown event type")
		}
	}
	if err := fields.Err(); err != nil {
		return nil, err
	}
	slices.Sort(events)
	id, err := uuid.NewV7()
	if err != nil {
		return nil, err
	}
	e := store.Endpoint{OrgID: org, ID: id, URL: req.GetUrl(), Events: slices.Compact(events), Key: signature.NewKey()}
	if err := s.cfg.Store.CreateEndpoint(ctx, &e); err != nil {
		return nil, err
	}
	httpcode.Set(ctx, http.StatusCreated)
	return &webhooksv1.CreateEndpointResponse{Endpoint: toEndpoint(&e), Secret: signature.Secret(e.Key)}, nil
}

// ListEndpoints answers the organization's endpoints, newest first.
func (s *Server) ListEndpoints(ctx context.Context, _ *webhooksv1.ListEndpointsRequest) (*webhooksv1.ListEndpointsResponse, error) {
	out, err := resource.List(ctx, s.cfg.Store.ListEndpoints, toEndpoint)
	if err != nil {
		return nil, err
	}
	return &webhooksv1.ListEndpointsResponse{Endpoints: out}, nil
}

// DeleteEndpoint removes the endpoint and its deliveries.
func (s *Server) DeleteEndpoint(ctx context.Context, req *webhooksv1.DeleteEndpointRequest) (*webhooksv1.DeleteEndpointResponse, error) {
	org, id, err := endpointKind.Target(ctx, req.GetId())
	if err != nil {
		return nil, err
	}
	if err := s.cfg.Store.DeleteEndpoint(ctx, org, id); err != nil {
		return nil, endpointKind.StoreError(err)
	}
	return &webhooksv1.DeleteEndpointResponse{Id: id.String(), Deleted: true}, nil
}

// ListDeliveries answers the endpoint's latest deliveries with their attempts.
func (s *Server) ListDeliveries(ctx context.Context, req *webhooksv1.ListDeliveriesRequest) (*webhooksv1.ListDeliveriesResponse, error) {
	limit := int(req.GetLimit())
	switch {
	case limit == 0:
		limit = defaultDeliveries
	case limit < 1 || limit > maxDeliveries:
		return nil, apierr.Field("limit", "must be between 1 and "+strconv.Itoa(maxDeliveries))
	}
	e, err := resource.Get(ctx, endpointKind, req.GetId(), s.cfg.Store.GetEndpoint)
	if err != nil {
		return nil, err
	}
	ds, err := s.cfg.Store.ListDeliveries(ctx, e.OrgID, e.ID, limit)
	if err != nil {
		return nil, err
	}
	out := make([]*webhooksv1.Delivery, len(ds))
	for i := range ds {
		out[i] = toDelivery(&ds[i])
	}
	return &webhooksv1.ListDeliveriesResponse{Deliveries: out}, nil
}

// RetryDelivery makes the delivery pending again, attempted at once with the same webhook-id.
func (s *Server) RetryDelivery(ctx context.Context, req *webhooksv1.RetryDeliveryRequest) (*webhooksv1.RetryDeliveryResponse, error) {
	org, endpoint, err := endpointKind.Target(ctx, req.GetId())
	if err != nil {
		return nil, err
	}
	id, err := deliveryKind.ID(req.GetDeliveryId())
	if err != nil {
		return nil, err
	}
	d, err := s.cfg.Retrier.Retry(ctx, org, endpoint, id)
	if err != nil {
		return nil, deliveryKind.StoreError(err)
	}
	httpcode.Set(ctx, http.StatusAccepted)
	return &webhooksv1.RetryDeliveryResponse{Delivery: toDelivery(&d)}, nil
}

func toEndpoint(e *store.Endpoint) *webhooksv1.Endpoint {
	out := &webhooksv1.Endpoint{Id: e.ID.String(), Url: e.URL, Events: e.Events, Status: "active", CreatedAt: timestamppb.New(e.CreatedAt)}
	if e.DisabledAt != nil {
		out.Status = "disabled"
		out.DisabledReason = wrapperspb.String(*e.DisabledReason)
	}
	return out
}

func toDelivery(d *store.Delivery) *webhooksv1.Delivery {
	out := &webhooksv1.Delivery{Id: d.ID.String(), EventType: d.EventType, Status: d.Status, CreatedAt: timestamppb.New(d.CreatedAt),
		Attempts: make([]*webhooksv1.Attempt, len(d.Attempts))}
	if d.NextAttemptAt != nil && d.Status == store.StatusPending {
		out.NextAttemptAt = timestamppb.New(*d.NextAttemptAt)
	}
	for i, a := range d.Attempts {
		pa := &webhooksv1.Attempt{AttemptedAt: timestamppb.New(a.At), DurationMs: int32(a.Duration.Milliseconds())}
		if a.StatusCode != nil {
			pa.StatusCode = wrapperspb.Int32(*a.StatusCode)
		}
		if a.Error != nil {
			pa.Error = wrapperspb.String(*a.Error)
		}
		out.Attempts[i] = pa
	}
	return out
}
