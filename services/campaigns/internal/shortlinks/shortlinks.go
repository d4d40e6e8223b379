// Package shortlinks gives the texts a campaign sends the organization's short links: every web
// address in them (as pkg/textlinks finds it, the rule replies follow) becomes messaging's
// short link for the campaign, one code per distinct address per campaign. Messaging creates
// codes idempotently per (source, address), so a retried or restarted fan-out gets the codes it
// got before, and the texts stored, priced and sent all carry them.
package shortlinks

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/chorus-sms/chorus/pkg/textlinks"
)

// Service is messaging's link call (pkg/clients/messaging.Client).
type Service interface {
	ShortenLinks(ctx context.Context, org uuid.UUID, kind, id string, urls []string) ([]string, error)
}

// batchSize is the most addresses one ShortenLinks call carries (messaging's maximum).
const batchSize = 1000

// rememberBytes bounds the addresses a Rewriter remembers, so that a campaign whose every text
// has an address of its own (a merge field inside the URL) does not grow memory with its
// audience; past it, addresses are asked for again (same answer).
const rememberBytes = 1 << 20

// Rewriter rewrites the texts of one source (a campaign, or its test copies) of an
// organization, remembering the links it got so a long fan-out asks for each address once.
// It is not safe for concurrent use.
type Rewriter struct {
	svc      Service
	org      uuid.UUID
	kind, id string
	known    map[string]string
	size     int
}

// New returns a Rewriter of org's source: kind "campaign" for the campaign's messages, "test"
// for its test copies (shortened so the tester sees what recipients get; their clicks count
// for no campaign).
func New(svc Service, org uuid.UUID, kind string, campaign uuid.UUID) *Rewriter {
	return &Rewriter{svc: svc, org: org, kind: kind, id: campaign.String(), known: map[string]string{}}
}

// Rewrite replaces, in place, every address of every text with its short link. The addresses
// it has not seen before are asked of messaging in calls of up to 1000 for the whole slice,
// never one call per text. Every text a campaign sends goes through here.
func (r *Rewriter) Rewrite(ctx context.Context, texts []string) error {
	var missing []string
	var linked []int // the texts with an address: most have none, and are read once
	asked := map[string]bool{}
	for i, t := range texts {
		spans := textlinks.Find(t)
		if len(spans) > 0 {
			linked = append(linked, i)
		}
		for _, s := range spans {
			if _, ok := r.known[s.URL]; !ok && !asked[s.URL] {
				asked[s.URL] = true
				missing = append(missing, s.URL)
			}
		}
	}
	got := make(map[string]string, len(missing))
	for start := 0; start < len(missing); start += batchSize {
		urls := missing[start:min(start+batchSize, len(missing))]
		short, err := r.svc.ShortenLinks(ctx, r.org, r.kind, r.id, urls)
		if err != nil {
			return fmt.Errorf("short links: %w", err)
		}
		if len(short) != len(urls) {
			return fmt.Errorf("short links: %d answers for %d addresses", len(short), len(urls))
		}
		for i, u := range urls {
			got[u] = short[i]
			r.remember(u, short[i])
		}
	}
	for _, i := range linked {
		out, err := textlinks.Rewrite(texts[i], func(u string) (string, error) {
			if s, ok := got[u]; ok {
				return s, nil
			}
			if s, ok := r.known[u]; ok {
				return s, nil
			}
			return "", fmt.Errorf("no short link for %q", u)
		})
		if err != nil {
			return err
		}
		texts[i] = out
	}
	return nil
}

func (r *Rewriter) remember(url, short string) {
	if r.size+len(url)+len(short) > rememberBytes {
		return
	}
	r.known[url] = short
	r.size += len(url) + len(short)
}
