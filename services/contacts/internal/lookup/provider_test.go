package lookup_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-sms/chorus/pkg/twilio"
	"github.com/chorus-sms/chorus/services/contacts/internal/lookup"
)

func TestNewProvider(t *testing.T) {
	t.Parallel()
	_, err := lookup.NewProvider("twilio", twilio.LookupConfig{AccountSID: "AC1"})
	assert.ErrorContains(t, err, "CHORUS_TWILIO_AUTH_TOKEN")
	_, err = lookup.NewProvider("carrier-pigeon", twilio.LookupConfig{})
	assert.Error(t, err)
	p, err := lookup.NewProvider("", twilio.LookupConfig{})
	require.NoError(t, err)
	assert.Equal(t, lookup.Sandbox{}, p)
}

// A number whose line type Twilio cannot tell is undetermined (not worth a retry); Twilio's
// other failures are worth one.
func TestTwilioProviderUndetermined(t *testing.T) {
	t.Parallel()
	for body, undetermined := range map[string]bool{
		`{"valid": true, "line_type_intelligence": {"type": null, "error_code": 60600}}`: true,
		`<html>`: false,
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write([]byte(body))
		}))
		p, err := lookup.NewProvider("twilio", twilio.LookupConfig{AccountSID: "AC1", AuthToken: "t", BaseURL: srv.URL})
		require.NoError(t, err)
		_, err = p.Textable(context.Background(), "+12025550143")
		srv.Close()
		require.Error(t, err)
		assert.Equal(t, undetermined, errors.Is(err, lookup.ErrUndetermined), "%s: %v", body, err)
	}
}

func TestSandboxByLastFourDigits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for number, want := range map[string]bool{"+12025550143": true, "+12025550002": false, "+12025550020": true} {
		got, err := lookup.Sandbox{}.Textable(ctx, number)
		require.NoError(t, err)
		assert.Equal(t, want, got, number)
	}
	_, err := lookup.Sandbox{}.Textable(ctx, "+12025550003")
	require.Error(t, err)
	assert.False(t, errors.Is(err, lookup.ErrUndetermined), "0003 fails in a way worth retrying")
	assert.True(t, strings.Contains(err.Error(), "0003"))
}
