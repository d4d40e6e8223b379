package server

import (
	"context"
	"errors"
	"net/url"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/chorus-sms/chorus/pkg/apierr"
	"github.com/chorus-sms/chorus/pkg/tenant"
	billingv1 "github.com/chorus-sms/chorus/proto/gen/go/billing/v1"
	"github.com/chorus-sms/chorus/services/billing/internal/store"
)

// dateLayout is the spec's date string (paid_through, next_billing_date).
const dateLayout = "2006-01-02"

// maxText bounds the free-text settings (brand, subscription fields).
const maxText = 200

var (
	pricingModels   = []string{store.PricingUnlimited, store.PricingPerMessage, store.PricingFullService}
	billingStatuses = []string{store.StatusActive, store.StatusPastDue, store.StatusSuspended, store.StatusOverageWarning, store.StatusArchived}
)

// GetBillingStatus returns the caller's organization's billing status.
func (s *Server) GetBillingStatus(ctx context.Context, _ *billingv1.GetBillingStatusRequest) (*billingv1.GetBillingStatusResponse, error) {
	org, err := tenant.Org(ctx)
	if err != nil {
		return nil, err
	}
	a, err := s.store.Account(ctx, org)
	if err != nil {
		return nil, err
	}
	st, err := s.status(ctx, a)
	if err != nil {
		return nil, err
	}
	return &billingv1.GetBillingStatusResponse{Status: st}, nil
}

// GetCreditBalance returns the caller's organization's available (purchased) credits.
func (s *Server) GetCreditBalance(ctx context.Context, _ *billingv1.GetCreditBalanceRequest) (*billingv1.GetCreditBalanceResponse, error) {
	org, err := tenant.Org(ctx)
	if err != nil {
		return nil, err
	}
	a, err := s.store.Account(ctx, org)
	if err != nil {
		return nil, err
	}
	return &billingv1.GetCreditBalanceResponse{Balance: a.Balance.Available}, nil
}

// SetAccount creates or replaces an organization's account settings (an operator RPC).
func (s *Server) SetAccount(ctx context.Context, req *billingv1.SetAccountRequest) (*billingv1.SetAccountResponse, error) {
	fields := apierr.Fields{}
	a := store.Account{
		OrganizationID: bodyID(fields, "organizationId", req.GetOrganizationId()),
		PricingModel:   oneOf(fields, "pricingModel", req.GetPricingModel(), "", pricingModels),
		BillingStatus:  oneOf(fields, "billingStatus", req.GetBillingStatus(), store.StatusActive, billingStatuses),
		Brand:          text(fields, "brand", req.GetBrand(), store.DefaultBrand),
		Subscription:   subscription(fields, req.GetSubscription()),
	}
	if a.PricingModel == store.PricingPerMessage && a.Subscription != nil {
		fields.Add("subscription", "a per_message plan is credit-only: it has no subscription")
	}
	if p := req.GetPortalUrls(); p != nil {
		a.CustomerPortalURL = portalURL(fields, "portalUrls.customerPortal", p.GetCustomerPortal())
		a.SubscriptionManagementURL = portalURL(fields, "portalUrls.subscriptionManagement", p.GetSubscriptionManagement())
	}
	if err := fields.Err(); err != nil {
		return nil, err
	}
	a, err := s.store.SetAccount(ctx, a)
	if errors.Is(err, store.ErrPlanNeedsPeriod) {
		field := "subscription.currentPeriodEnd"
		if !slices.Contains(intervals, req.GetSubscription().GetBillingInterval()) {
			field = "subscription.billingInterval"
		}
		return nil, apierr.Field(field, "an account with included credits per period renews every month or year from a period end")
	}
	if err != nil {
		return nil, err
	}
	st, err := s.status(ctx, a)
	if err != nil {
		return nil, err
	}
	return &billingv1.SetAccountResponse{Status: st}, nil
}

// SetBillingStatus sets an organization's billing status (an operator RPC: suspend,
// reactivate). An organization without an account answers as a missing one.
func (s *Server) SetBillingStatus(ctx context.Context, req *billingv1.SetBillingStatusRequest) (*billingv1.SetBillingStatusResponse, error) {
	fields := apierr.Fields{}
	org := bodyID(fields, "organizationId", req.GetOrganizationId())
	st := oneOf(fields, "status", req.GetStatus(), "", billingStatuses)
	if err := fields.Err(); err != nil {
		return nil, err
	}
	a, err := s.store.SetBillingStatus(ctx, org, st)
	if errors.Is(err, store.ErrNoAccount) {
		return nil, apierr.NotFound("the organization has no billing account")
	}
	if err != nil {
		return nil, err
	}
	out, err := s.status(ctx, a)
	if err != nil {
		return nil, err
	}
	return &billingv1.SetBillingStatusResponse{Status: out}, nil
}

// status builds the spec's Billing status of a.
func (s *Server) status(ctx context.Context, a store.Account) (*billingv1.BillingStatus, error) {
	products, err := s.store.Products(ctx)
	if err != nil {
		return nil, err
	}
	st := &billingv1.BillingStatus{
		OrganizationId: a.OrganizationID.String(),
		Brand:          a.Brand,
		BillingStatus:  a.BillingStatus,
		PricingModel:   a.PricingModel,
		Credits:        toCredits(a.Balance),
		PortalUrls: &billingv1.PortalUrls{
			CustomerPortal: optString(a.CustomerPortalURL), SubscriptionManagement: optString(a.SubscriptionManagementURL),
		},
		AvailableCreditProducts: make([]*billingv1.CreditProduct, 0, len(products)),
	}
	if sub := a.Subscription; sub != nil {
		st.Subscription = &billingv1.Subscription{
			Id: sub.ID, PlanType: sub.PlanType, BillingInterval: sub.BillingInterval, Status: sub.Status,
			PaidThrough: optDate(sub.PaidThrough), NextBillingDate: optDate(sub.NextBillingDate), Provider: sub.Provider,
		}
		if sub.CurrentPeriodEnd != nil {
			st.Subscription.CurrentPeriodEnd = timestamppb.New(*sub.CurrentPeriodEnd)
		}
	}
	for _, p := range products {
		st.AvailableCreditProducts = append(st.AvailableCreditProducts, &billingv1.CreditProduct{
			Id: p.ID, Name: p.Name, CreditsAmount: p.CreditsAmount, PriceCents: p.PriceCents,
		})
	}
	return st, nil
}

func subscription(fields apierr.Fields, sub *billingv1.Subscription) *store.Subscription {
	if sub == nil {
		return nil
	}
	out := &store.Subscription{
		ID:              required(fields, "subscription.id", sub.GetId()),
		PlanType:        required(fields, "subscription.planType", sub.GetPlanType()),
		BillingInterval: required(fields, "subscription.billingInterval", sub.GetBillingInterval()),
		Status:          required(fields, "subscription.status", sub.GetStatus()),
		Provider:        text(fields, "subscription.provider", sub.GetProvider(), ""),
		PaidThrough:     date(fields, "subscription.paidThrough", sub.GetPaidThrough()),
		NextBillingDate: date(fields, "subscription.nextBillingDate", sub.GetNextBillingDate()),
	}
	out.CurrentPeriodEnd = timestamp(fields, "subscription.currentPeriodEnd", sub.GetCurrentPeriodEnd())
	return out
}

func oneOf(fields apierr.Fields, field, v, def string, allowed []string) string {
	if v == "" && def != "" {
		return def
	}
	for _, a := range allowed {
		if v == a {
			return v
		}
	}
	fields.Add(field, "must be one of "+strings.Join(allowed, ", "))
	return v
}

func text(fields apierr.Fields, field, v, def string) string {
	v = strings.TrimSpace(v)
	if v == "" {
		return def
	}
	if len(v) > maxText {
		fields.Add(field, "at most 200 characters")
	}
	return v
}

func required(fields apierr.Fields, field, v string) string {
	if strings.TrimSpace(v) == "" {
		fields.Add(field, "required")
	}
	return text(fields, field, v, "")
}

// date reads an optional date; "" is none.
func date(fields apierr.Fields, field string, v string) *time.Time {
	if v == "" {
		return nil
	}
	t, err := time.Parse(dateLayout, v)
	if err != nil {
		fields.Add(field, "must be a date (YYYY-MM-DD)")
		return nil
	}
	return &t
}

func portalURL(fields apierr.Fields, field string, v *wrapperspb.StringValue) *string {
	if v == nil {
		return nil
	}
	s := v.GetValue()
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || len(s) > 2000 {
		fields.Add(field, "must be an absolute http(s) URL")
		return nil
	}
	return &s
}

func optString(s *string) *wrapperspb.StringValue {
	if s == nil {
		return nil
	}
	return wrapperspb.String(*s)
}

// optDate is a date as the API gives it: absent (nil) when unknown, never "" nor null.
func optDate(t *time.Time) *string {
	if t == nil {
		return nil
	}
	d := t.Format(dateLayout)
	return &d
}
