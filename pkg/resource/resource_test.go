package resource

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/chorus-sms/chorus/pkg/apierr"
	"github.com/chorus-sms/chorus/pkg/tenant"
)

var (
	errMissing = errors.New("widget not found")
	widget     = Kind{Name: "widget", Reason: "WIDGET_NOT_FOUND", Missing: errMissing}
)

func as(access tenant.Access) (context.Context, uuid.UUID) {
	org := uuid.New()
	return tenant.WithPrincipal(context.Background(), tenant.Principal{OrgID: org, Access: access}), org
}

// A malformed id and the store's missing record (wrapped or not) are the kind's 404; any other
// store error passes through.
func TestMissingRecordsAreTheKindsNotFound(t *testing.T) {
	_, err := widget.ID("not-a-uuid")
	assert.Equal(t, codes.NotFound, status.Code(err))
	assert.Equal(t, "WIDGET_NOT_FOUND", apierr.Reason(err))
	assert.Equal(t, "widget not found", status.Convert(err).Message())

	assert.Equal(t, codes.NotFound, status.Code(widget.StoreError(fmt.Errorf("get: %w", errMissing))))
	other := errors.New("connection reset")
	assert.Same(t, other, widget.StoreError(other))
}

// Get reads the caller's record; List converts each of the caller's records in order.
func TestGetAndListReadTheCallersRecords(t *testing.T) {
	ctx, org := as(tenant.AccessRead)
	id := uuid.New()
	got, err := Get(ctx, widget, id.String(), func(_ context.Context, o, i uuid.UUID) (string, error) {
		if o != org || i != id {
			return "", errMissing
		}
		return "found", nil
	})
	require.NoError(t, err)
	assert.Equal(t, "found", got)
	_, err = Get(ctx, widget, uuid.NewString(), func(context.Context, uuid.UUID, uuid.UUID) (string, error) { return "", errMissing })
	assert.Equal(t, "WIDGET_NOT_FOUND", apierr.Reason(err))

	names, err := List(ctx, func(_ context.Context, o uuid.UUID) ([]int, error) {
		require.Equal(t, org, o)
		return []int{1, 2}, nil
	}, func(n *int) string { return fmt.Sprint(*n) })
	require.NoError(t, err)
	assert.Equal(t, []string{"1", "2"}, names)

	_, err = List(context.Background(), func(context.Context, uuid.UUID) ([]int, error) { return nil, nil }, func(*int) int { return 0 })
	assert.Equal(t, codes.Unauthenticated, status.Code(err), "no organization on the call")
}

// A write needs write access before its id is read.
func TestTargetNeedsWriteAccess(t *testing.T) {
	ctx, _ := as(tenant.AccessRead)
	_, _, err := widget.Target(ctx, "not-a-uuid")
	assert.Equal(t, codes.PermissionDenied, status.Code(err))

	ctx, org := as(tenant.AccessWrite)
	id := uuid.New()
	gotOrg, gotID, err := widget.Target(ctx, id.String())
	require.NoError(t, err)
	assert.Equal(t, [2]uuid.UUID{org, id}, [2]uuid.UUID{gotOrg, gotID})
}
