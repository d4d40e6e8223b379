package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/chorus-sms/chorus/pkg/registry"
	"github.com/chorus-sms/chorus/pkg/twilio"
	billingv1 "github.com/chorus-sms/chorus/proto/gen/go/billing/v1"
	messagingv1 "github.com/chorus-sms/chorus/proto/gen/go/messaging/v1"
	orgsv1 "github.com/chorus-sms/chorus/proto/gen/go/orgs/v1"
)

// msgEnv is a stack with clients of the services operators and other services call.
type msgEnv struct {
	*env
	billing billingv1.BillingServiceClient
}

func newMsgEnv(t *testing.T, overrides map[string]string) *msgEnv {
	t.Helper()
	vars := map[string]string{"CHORUS_SANDBOX_DELAY": "50ms", "CHORUS_NUMBER_RATE": "1000"}
	for k, v := range overrides {
		vars[k] = v
	}
	e := newEnv(t, vars)
	return &msgEnv{
		env:     e,
		billing: billingv1.NewBillingServiceClient(dial(t, e.st.Addr(registry.Billing))),
	}
}

// tenant is an organization with a writer and, when number is set, a default sending number.
type tenant struct {
	*client
	number   string
	numberID string
}

// newTenant makes a non-sandbox organization (its messages cost credits) with credits granted
// and a default number (none when number is empty).
func (e *msgEnv) newTenant(number string, credits int32) *tenant {
	e.t.Helper()
	return e.newTenantIn("America/Chicago", number, credits)
}

// newTenantIn is newTenant with the organization's timezone zone.
func (e *msgEnv) newTenantIn(zone, number string, credits int32) *tenant {
	e.t.Helper()
	return e.newTenantOf(&orgsv1.CreateOrganizationRequest{Timezone: zone}, number, credits)
}

// newTenantOf is newTenant with the organization org describes (its timezone, sandbox mode);
// a name is made up when org has none.
func (e *msgEnv) newTenantOf(org *orgsv1.CreateOrganizationRequest, number string, credits int32) *tenant {
	t := e.t
	t.Helper()
	ctx := context.Background()
	if org.GetName() == "" {
		org.Name = "Acme " + strconv.FormatInt(time.Now().UnixNano(), 36)
	}
	res, err := e.orgs.CreateOrganization(ctx, org)
	require.NoError(t, err)
	id := res.GetOrganization().GetId()
	user := "user-" + id
	e.member(id, user, "write")
	tn := &tenant{client: e.as(user, id), number: number}
	if credits > 0 {
		_, err := e.billing.GrantCredits(ctx, &billingv1.GrantCreditsRequest{OrganizationId: id, Amount: credits, IdempotencyKey: "seed-" + id})
		require.NoError(t, err)
	}
	if number != "" {
		n, err := e.messaging.AddNumber(ctx, &messagingv1.AddNumberRequest{OrganizationId: id, Number: number, IsDefault: true})
		require.NoError(t, err)
		tn.numberID = n.GetPhoneNumberId()
	}
	return tn
}

// balance is the tenant's available credits over REST.
func (tn *tenant) balance() float64 {
	res := tn.do("GET", "/api/credits/balance", nil)
	require.Equal(tn.e.t, http.StatusOK, res.Status, "%s", res.Body)
	return res.JSON(tn.e.t)["balance"].(float64)
}

// contact creates a contact with phone and waits until the sandbox lookup has answered
// (numbers ending 0003 never answer: pass wait false).
func (tn *tenant) contact(phone, firstName string, wait bool) string {
	t := tn.e.t
	t.Helper()
	res := tn.do("POST", "/api/contacts", map[string]any{"phone": phone, "firstName": firstName, "lastName": "Test"})
	require.Contains(t, []int{200, 201}, res.Status, "%s", res.Body)
	id := res.JSON(t)["id"].(string)
	if wait {
		eventually(t, 15*time.Second, "phone lookup of "+phone, func() bool {
			return tn.do("GET", "/api/contacts/"+id, nil).JSON(t)["isTextable"] != nil
		})
	}
	return id
}

// thread returns the messages of the tenant's thread with phone, newest first.
func (tn *tenant) thread(phone string) []map[string]any {
	t := tn.e.t
	t.Helper()
	res := tn.do("GET", "/api/conversations/"+url.PathEscape(phone)+"/messages", nil)
	require.Equal(t, http.StatusOK, res.Status, "%s", res.Body)
	var out []map[string]any
	for _, m := range res.JSON(t)["messages"].([]any) {
		out = append(out, m.(map[string]any))
	}
	return out
}

// webhook posts a carrier callback signed with token, as the carrier would.
func (e *msgEnv) webhook(path, token, signature string, form url.Values) response {
	t := e.t
	t.Helper()
	if signature == "" && token != "" {
		signature = twilio.Sign(token, e.st.HTTPURL+path, form)
	}
	req, err := http.NewRequest("POST", e.st.HTTPURL+path, strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if signature != "" {
		req.Header.Set("X-Twilio-Signature", signature)
	}
	res, err := e.http.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	return response{Status: res.StatusCode, Header: res.Header, Body: raw}
}

// text delivers an inbound message through the sandbox carrier's webhook and checks it was
// taken.
func (e *msgEnv) text(to, from, body string, media ...string) {
	e.t.Helper()
	res := e.inbound(to, from, body, media...)
	require.Equal(e.t, http.StatusOK, res.Status, "%s", res.Body)
}

func newSID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "SM" + hex.EncodeToString(b[:])
}

func jsonUnmarshal(raw []byte, v any) error { return json.Unmarshal(raw, v) }

// twilioStack is the stack configuration of a real-carrier (Twilio) deployment whose carrier is
// the fake at carrierURL signing with token, with secrets of its own as such a deployment
// must have; extra adds or overrides variables.
func twilioStack(carrierURL, token string, extra map[string]string) map[string]string {
	vars := map[string]string{
		"CHORUS_SMS_PROVIDER": "twilio", "CHORUS_TWILIO_ACCOUNT_SID": "ACe2e",
		"CHORUS_TWILIO_AUTH_TOKEN": token, "CHORUS_TWILIO_API_URL": carrierURL,
		"CHORUS_CURSOR_SECRET": "e2e-cursor-secret", "CHORUS_SANDBOX_AUTH_TOKEN": "e2e-sandbox-token",
	}
	for k, v := range extra {
		vars[k] = v
	}
	return vars
}
