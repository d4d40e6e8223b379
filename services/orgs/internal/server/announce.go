package server

import (
	"context"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	orgsclient "github.com/chorus-sms/chorus/pkg/clients/orgs"
)

// announcer tells the other processes' in-process caches that something they hold changed,
// so they drop it at once: a membership (the gateways' orgsclient.AccessCache, whose entries
// live at most a second anyway) or an organization's settings (every service's orgs client,
// whose copies live at most orgsclient.DefaultTTL). An announcement that is lost (Redis down,
// this process killed after the commit) delays the change by no more than that; the database
// stays the only source of truth, and there is no cache here that could hold a revoked grant
// longer.
type announcer struct {
	rdb *redis.Client
	log *slog.Logger
}

// Bounds of one announcement: a few quick tries, whatever happens to the caller's request.
const (
	announceTries   = 3
	announceTimeout = 2 * time.Second
)

// changed announces a change of user's membership in org.
func (a *announcer) changed(ctx context.Context, org uuid.UUID, user string) {
	a.announce(ctx, orgsclient.AccessChannel, orgsclient.AccessChange(org, user),
		"membership change not announced; gateways see it when their entry expires (at most 1 s)")
}

// orgChanged announces a change of org's settings.
func (a *announcer) orgChanged(ctx context.Context, org uuid.UUID) {
	a.announce(ctx, orgsclient.OrganizationChannel, org.String(),
		"organization change not announced; services see it when their cached copy expires (at most 30 s)")
}

// announce publishes payload on channel, logging lost when it could not.
func (a *announcer) announce(ctx context.Context, channel, payload, lost string) {
	// The change is committed: announce it even if the caller gave up meanwhile.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), announceTimeout)
	defer cancel()
	var err error
	for try, wait := 0, 50*time.Millisecond; try < announceTries; try, wait = try+1, wait*2 {
		if try > 0 {
			select {
			case <-ctx.Done():
				try = announceTries
				continue
			case <-time.After(wait):
			}
		}
		if err = a.rdb.Publish(ctx, channel, payload).Err(); err == nil {
			return
		}
	}
	a.log.WarnContext(ctx, lost, "err", err)
}
