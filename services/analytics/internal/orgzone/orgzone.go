// Package orgzone answers an organization's timezone, in which analytics buckets hours and
// days and reads date ranges.
package orgzone

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/chorus-sms/chorus/pkg/clients"
	"github.com/chorus-sms/chorus/pkg/clients/orgs"
)

// Zones looks organizations' zones up through the orgs service (whose client caches each
// organization for 30 s) and keeps each loaded location, so an event costs no zone parsing.
type Zones struct {
	orgs *orgs.Client
	locs sync.Map // zone name → *time.Location
}

// New returns Zones asking o.
func New(o *orgs.Client) *Zones { return &Zones{orgs: o} }

// Of returns org's zone. An organization orgs does not know, or one without a valid zone, is
// read in UTC rather than holding its events back for ever.
func (z *Zones) Of(ctx context.Context, org uuid.UUID) (*time.Location, error) {
	o, err := z.orgs.Organization(ctx, org)
	if errors.Is(err, clients.ErrNotFound) {
		return time.UTC, nil
	}
	if err != nil {
		return nil, fmt.Errorf("zone of organization %s: %w", org, err)
	}
	return z.load(o.GetTimezone()), nil
}

func (z *Zones) load(name string) *time.Location {
	if loc, ok := z.locs.Load(name); ok {
		return loc.(*time.Location)
	}
	loc, err := time.LoadLocation(name)
	if err != nil || name == "" {
		loc = time.UTC
	}
	z.locs.Store(name, loc)
	return loc
}
