package dispatch

import (
	"context"
	"fmt"
	"time"

	"github.com/chorus-sms/chorus/pkg/apierr"
	"github.com/chorus-sms/chorus/services/messaging/internal/store"
)

// CodeFrequencyCapped: the recipient was handed another campaign message within the
// organization's frequency cap; the message is withdrawn before anything is paid, and its
// campaign counts it as skipped.
const CodeFrequencyCapped = apierr.ReasonFrequencyCapped

// capAnswer says whether one campaign message falls under its organization's frequency cap;
// err when the organization or the log could not be read.
type capAnswer struct {
	capped bool
	err    error
}

// checkCaps answers, for each of msgs (campaign messages), whether its recipient was handed
// another campaign message within its organization's frequency cap (orgs' setting, read
// through the orgs client's 30 s cache), with one probe of the log per message in one
// statement; an organization without a cap asks nothing.
func (d *Dispatcher) checkCaps(ctx context.Context, msgs []store.Message) ([]capAnswer, error) {
	out := make([]capAnswer, len(msgs))
	now := time.Now()
	var probes []store.CapProbe
	var asked []int
	for org, idx := range byOrg(msgs) {
		o, err := d.orgs.Organization(ctx, org)
		if err != nil {
			for _, i := range idx {
				out[i].err = fmt.Errorf("frequency cap of organization %s: %w", org, err)
			}
			continue
		}
		hours := o.GetFrequencyCapHours()
		if hours <= 0 {
			continue
		}
		since := now.Add(-time.Duration(hours) * time.Hour)
		for _, i := range idx {
			probes = append(probes, store.CapProbe{Org: org, Phone: msgs[i].ContactPhone, Since: since, Except: msgs[i].ID})
			asked = append(asked, i)
		}
	}
	if len(probes) == 0 {
		return out, nil
	}
	sent, err := d.store.CampaignSentSince(ctx, probes)
	for j, i := range asked {
		if err != nil {
			out[i].err = err
			continue
		}
		out[i].capped = sent[j]
	}
	return out, nil
}

// skipIfCapped withdraws m, a campaign message, failed FREQUENCY_CAPPED before anything is
// paid, when its recipient was handed a campaign message within the organization's frequency
// cap, and reports whether it did. Polls, replies, auto-replies and test copies are never
// capped (and, not being campaign messages, never count).
func (d *Dispatcher) skipIfCapped(ctx context.Context, m store.Message) (skipped bool, err error) {
	if m.SourceKind != store.SourceCampaign {
		return false, nil
	}
	// Most organizations have no cap: their messages skip the batch step (the organization is
	// in the client's cache).
	o, err := d.orgs.Organization(ctx, m.OrgID)
	if err != nil {
		return false, fmt.Errorf("frequency cap of organization %s: %w", m.OrgID, err)
	}
	if o.GetFrequencyCapHours() <= 0 {
		return false, nil
	}
	a, err := d.batches.caps.Do(ctx, m)
	if err != nil {
		return false, err
	}
	if a.err != nil || !a.capped {
		return false, a.err
	}
	_, err = d.fail(ctx, m, CodeFrequencyCapped, nil)
	return true, err
}
