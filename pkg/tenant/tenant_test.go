package tenant_test

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"google.golang.org/grpc/metadata"

	"github.com/chorus-sms/chorus/pkg/tenant"
)

func TestMDIsWhatAppendToOutgoingAdds(t *testing.T) {
	for _, p := range []tenant.Principal{
		{OrgID: uuid.New(), User: "alice", Access: tenant.AccessRead, RequestID: "req-1"},
		{OrgID: uuid.New(), User: "service:campaigns", Access: tenant.AccessWrite},
	} {
		want, _ := metadata.FromOutgoingContext(tenant.AppendToOutgoing(context.Background(), p))
		assert.Equal(t, want, p.MD())

		got, ok := tenant.FromIncoming(metadata.NewIncomingContext(context.Background(), metadata.Join(p.MD(), metadata.Pairs("user-agent", "x"))))
		assert.True(t, ok)
		assert.Equal(t, p, got)
	}
}

func TestFromIncomingWithoutAnOrganization(t *testing.T) {
	p, ok := tenant.FromIncoming(context.Background())
	assert.False(t, ok)
	assert.Equal(t, tenant.Principal{}, p)

	p, ok = tenant.FromIncoming(metadata.NewIncomingContext(context.Background(), metadata.Pairs(tenant.MDRequestID, "req-2", tenant.MDOrg, "not-a-uuid")))
	assert.False(t, ok)
	assert.Equal(t, tenant.Principal{RequestID: "req-2"}, p)
}
