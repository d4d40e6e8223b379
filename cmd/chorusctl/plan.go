package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	billingv1 "github.com/chorus-sms/chorus/proto/gen/go/billing/v1"
)

// planSet sets an organization's plan through the billing service: its pricing model and, on
// full_service, the included credits renewed every period. It prints the plan and the balance
// after, which already has the first period's credits when the period starts now.
func planSet(ctx context.Context, fs *flag.FlagSet, args []string) (any, error) {
	org := fs.String("org", "", "organization id")
	pricing := fs.String("pricing", "", "unlimited, per_message or full_service")
	included := fs.Int("included", 0, "full_service: included credits granted every period (the unused ones expire)")
	interval := fs.String("interval", "", "month or year (required with full_service; otherwise empty keeps the account's)")
	periodEnd := fs.String("period-end", "", "end of the current period, RFC 3339 (default: the account's, or now: the first period starts at once)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if *included < 0 || *included > math.MaxInt32 {
		return nil, fmt.Errorf("--included must be a number of credits")
	}
	req := &billingv1.SetPlanRequest{
		OrganizationId: *org, PricingModel: *pricing, IncludedPerPeriod: int32(*included), BillingInterval: *interval,
	}
	if *periodEnd != "" {
		t, err := time.Parse(time.RFC3339, *periodEnd)
		if err != nil {
			return nil, fmt.Errorf("--period-end must be an RFC 3339 time such as 2026-03-01T00:00:00Z")
		}
		req.CurrentPeriodEnd = timestamppb.New(t)
	}
	return withBilling(ctx, func(c billingv1.BillingServiceClient) (any, error) {
		res, err := c.SetPlan(ctx, req)
		if err != nil {
			return nil, err
		}
		out := map[string]any{
			"organizationId": *org, "pricingModel": res.GetPlan().GetPricingModel(),
			"includedPerPeriod": res.GetPlan().GetIncludedPerPeriod(), "billingInterval": res.GetPlan().GetBillingInterval(),
			"currentPeriodEnd": nil,
			"available":        res.GetCredits().GetAvailable(), "included": res.GetCredits().GetIncluded(),
		}
		if end := res.GetPlan().GetCurrentPeriodEnd(); end != nil {
			out["currentPeriodEnd"] = end.AsTime().Format(time.RFC3339Nano)
		}
		return out, nil
	})
}
