package msgtest

import (
	"context"
	"sync"

	"github.com/google/uuid"

	"github.com/chorus-sms/chorus/pkg/apierr"
	orgsv1 "github.com/chorus-sms/chorus/proto/gen/go/orgs/v1"
)

// fakeOrgs is the orgs service as messaging calls it, its organizations held in memory.
type fakeOrgs struct {
	orgsv1.UnimplementedOrgsServiceServer

	mu   sync.Mutex
	orgs map[string]*orgsv1.Organization
}

// add creates an organization with the settings the orgs service gives one named only.
func (f *fakeOrgs) add(name string, sandbox bool) uuid.UUID {
	id := uuid.New()
	f.mu.Lock()
	defer f.mu.Unlock()
	f.orgs[id.String()] = &orgsv1.Organization{Id: id.String(), Name: name, Timezone: "America/New_York", Sandbox: sandbox}
	return id
}

func (f *fakeOrgs) GetOrganization(_ context.Context, req *orgsv1.GetOrganizationRequest) (*orgsv1.GetOrganizationResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	o, ok := f.orgs[req.GetId()]
	if !ok {
		return nil, apierr.NotFound("organization not found")
	}
	return &orgsv1.GetOrganizationResponse{Organization: o}, nil
}
