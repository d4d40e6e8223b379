package main

import (
	"context"
	"flag"

	billingv1 "github.com/chorus-sms/chorus/proto/gen/go/billing/v1"
)

// billingSetStatus sets an organization's billing status through the billing service:
// operators suspend an account (its sends are refused with BILLING_SUSPENDED) and reactivate
// it. Rerunning it changes nothing more. The billing service names a bad status.
func billingSetStatus(ctx context.Context, fs *flag.FlagSet, args []string) (any, error) {
	org := fs.String("org", "", "organization id (its billing account must exist: see org create --pricing, plan set)")
	status := fs.String("status", "", "active, past_due, suspended, overage_warning or archived")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	return withBilling(ctx, func(c billingv1.BillingServiceClient) (any, error) {
		res, err := c.SetBillingStatus(ctx, &billingv1.SetBillingStatusRequest{OrganizationId: *org, Status: *status})
		if err != nil {
			return nil, err
		}
		return map[string]string{"organizationId": *org, "billingStatus": res.GetStatus().GetBillingStatus()}, nil
	})
}
