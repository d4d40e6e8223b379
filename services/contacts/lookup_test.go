package contacts_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-sms/chorus/pkg/service"
	"github.com/chorus-sms/chorus/pkg/tenant"
	contactsv1 "github.com/chorus-sms/chorus/proto/gen/go/contacts/v1"
	"github.com/chorus-sms/chorus/services/contacts"
)

// textable reads a contact's isTextable: nil while the lookup is pending.
func textable(t *testing.T, e *env, ctx context.Context, id string) *bool {
	t.Helper()
	res, err := e.c.GetContact(ctx, &contactsv1.GetContactRequest{Id: id})
	require.NoError(t, err)
	if v := res.GetContact().GetIsTextable(); v != nil {
		b := v.GetValue()
		return &b
	}
	return nil
}

func TestSandboxLookupOutcomes(t *testing.T) {
	t.Parallel()
	e := start(t, nil)
	ctx := as(tenant.AccessWrite)
	created := time.Now()
	mobile, _ := create(t, e, ctx, &contactsv1.CreateContactRequest{Phone: str("2025550143")})
	landline, _ := create(t, e, ctx, &contactsv1.CreateContactRequest{Phone: str("2025550002")})
	failing, _ := create(t, e, ctx, &contactsv1.CreateContactRequest{Phone: str("2025550003")})
	for _, c := range []*contactsv1.CreatedContact{mobile, landline, failing} {
		assert.Nil(t, c.GetIsTextable(), "null until the lookup completes")
	}

	eventually(t, 15*time.Second, "the mobile number becomes textable", func() bool {
		v := textable(t, e, ctx, mobile.GetId())
		return v != nil && *v
	})
	t.Logf("mobile lookup completed %s after creation", time.Since(created).Round(time.Millisecond))
	eventually(t, 15*time.Second, "the landline becomes not textable", func() bool {
		v := textable(t, e, ctx, landline.GetId())
		return v != nil && !*v
	})

	// 0003 keeps failing: River records each error and retries with backoff (1s, 16s, 81s, ...);
	// the contact stays null.
	eventually(t, 15*time.Second, "the failing lookup is attempted and left to retry", func() bool {
		var state string
		var attempt, errs int
		err := e.db.QueryRow(ctx, `
			SELECT state, attempt, coalesce(array_length(errors, 1), 0) FROM river_job
			WHERE kind = 'contacts.phone_lookup' AND args->>'contact_id' = $1`, failing.GetId()).Scan(&state, &attempt, &errs)
		require.NoError(t, err)
		pending := state == "available" || state == "retryable" || state == "running"
		return pending && attempt >= 1 && errs == attempt
	})
	var maxAttempts int
	require.NoError(t, e.db.QueryRow(ctx, `SELECT max_attempts FROM river_job WHERE args->>'contact_id' = $1`, failing.GetId()).Scan(&maxAttempts))
	assert.Equal(t, 8, maxAttempts, "retries are capped")
	assert.Nil(t, textable(t, e, ctx, failing.GetId()))
}

func TestPhoneChangeResetsTextabilityAndLooksUpAgain(t *testing.T) {
	t.Parallel()
	e := start(t, nil)
	ctx := as(tenant.AccessWrite)
	c, _ := create(t, e, ctx, &contactsv1.CreateContactRequest{Phone: str("2025550143")})
	isTrue := func(id string) func() bool {
		return func() bool { v := textable(t, e, ctx, id); return v != nil && *v }
	}
	eventually(t, 15*time.Second, "textable", isTrue(c.GetId()))

	// Unrelated updates keep the result.
	up, err := e.c.UpdateContact(ctx, &contactsv1.UpdateContactRequest{Id: c.GetId(), FirstName: str("Ada"), Phone: str("(202) 555-0143")})
	require.NoError(t, err)
	assert.True(t, up.GetContact().GetIsTextable().GetValue(), "the same number in another format is no change")

	up, err = e.c.UpdateContact(ctx, &contactsv1.UpdateContactRequest{Id: c.GetId(), Phone: str("2025550002")})
	require.NoError(t, err)
	assert.Nil(t, up.GetContact().GetIsTextable(), "a new phone resets textability")
	eventually(t, 15*time.Second, "the landline is looked up", func() bool {
		v := textable(t, e, ctx, c.GetId())
		return v != nil && !*v
	})

	// Back to the first number, whose lookup already completed once: it is looked up again.
	_, err = e.c.UpdateContact(ctx, &contactsv1.UpdateContactRequest{Id: c.GetId(), Phone: str("2025550143")})
	require.NoError(t, err)
	eventually(t, 15*time.Second, "textable again", isTrue(c.GetId()))

	// Removing the phone leaves nothing to look up.
	up, err = e.c.UpdateContact(ctx, &contactsv1.UpdateContactRequest{Id: c.GetId(), Phone: str(""), Email: str("ada@example.com")})
	require.NoError(t, err)
	assert.Empty(t, up.GetContact().GetPhone())
	assert.Nil(t, up.GetContact().GetIsTextable())
}

func TestTwilioLookupProvider(t *testing.T) {
	t.Parallel()
	var badAuth, badFields, calls atomic.Int32
	twilio := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if user, pass, ok := r.BasicAuth(); !ok || user != "AC123" || pass != "secret-token" {
			badAuth.Add(1)
		}
		if r.URL.Query().Get("Fields") != "line_type_intelligence" {
			badFields.Add(1)
		}
		number := strings.TrimPrefix(r.URL.Path, "/v2/PhoneNumbers/")
		kind := "mobile"
		if strings.HasSuffix(number, "0100") {
			kind = "landline"
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"calling_country_code":"1","country_code":"US","phone_number":"` + number +
			`","national_format":"(202) 555-0100","valid":true,"validation_errors":[],"caller_name":null,` +
			`"line_type_intelligence":{"carrier_name":"Example","error_code":null,"mobile_country_code":"310","mobile_network_code":"456","type":"` + kind + `"},` +
			`"url":"https://lookups.twilio.com/v2/PhoneNumbers/` + number + `"}`))
	}))
	defer twilio.Close()
	e := start(t, func(cfg *contacts.Config) {
		cfg.LookupProvider = "twilio"
		cfg.Twilio.AccountSID, cfg.Twilio.AuthToken, cfg.Twilio.BaseURL = "AC123", "secret-token", twilio.URL
	})
	ctx := as(tenant.AccessWrite)
	landline, _ := create(t, e, ctx, &contactsv1.CreateContactRequest{Phone: str("2025550100")})
	mobile, _ := create(t, e, ctx, &contactsv1.CreateContactRequest{Phone: str("2025550143")})
	eventually(t, 15*time.Second, "both lookups complete", func() bool {
		return textable(t, e, ctx, landline.GetId()) != nil && textable(t, e, ctx, mobile.GetId()) != nil
	})
	assert.False(t, *textable(t, e, ctx, landline.GetId()))
	assert.True(t, *textable(t, e, ctx, mobile.GetId()))
	assert.GreaterOrEqual(t, calls.Load(), int32(2))
	assert.Zero(t, badAuth.Load(), "basic auth with the account SID and token")
	assert.Zero(t, badFields.Load(), "asks for line type intelligence")
}

func TestTwilioProviderNeedsCredentials(t *testing.T) {
	t.Parallel()
	_, err := contacts.New(t.Context(), contacts.Config{Storage: service.Storage{DatabaseURL: "postgres://unused"}, CursorSecret: "x", LookupProvider: "twilio"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "CHORUS_TWILIO_ACCOUNT_SID")
}

// With a real lookup provider the default cursor secret, which anyone can read here, is refused.
func TestTwilioProviderRefusesDefaultCursorSecret(t *testing.T) {
	_, err := contacts.New(t.Context(), contacts.Config{Storage: service.Storage{DatabaseURL: "postgres://unused"}, CursorSecret: contacts.DevCursorSecret, LookupProvider: "twilio"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "CHORUS_CURSOR_SECRET")
}
