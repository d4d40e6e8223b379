package server

import (
	"context"
	"log/slog"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"

	orgsclient "github.com/chorus-sms/chorus/pkg/clients/orgs"
)

// announcer tells the gateways' in-process caches (orgsclient.AccessCache) that a membership
// changed, so they drop its answer at once. Their entries live at most a second anyway, so an
// announcement that is lost (Redis down, this process killed after the commit) delays the
// change by no more than that; the database stays the only source of truth, and there is no
// cache here that could hold a revoked grant longer.
type announcer struct {
	rdb *redis.Client
	log *slog.Logger
}

// Bounds of one announcement: a few quick tries, whatever happens to the caller's request.
const (
	announceTries   = 3
	announceTimeout = 2 * time.Second
)

func (a *announcer) changed(ctx context.Context, org uuid.UUID, user string) {
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
		if err = a.rdb.Publish(ctx, orgsclient.AccessChannel, orgsclient.AccessChange(org, user)).Err(); err == nil {
			return
		}
	}
	a.log.WarnContext(ctx, "membership change not announced; gateways see it when their entry expires (at most 1 s)", "err", err)
}
