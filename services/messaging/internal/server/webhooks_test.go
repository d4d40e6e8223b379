package server_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/chorus-sms/chorus/pkg/apierr"
	"github.com/chorus-sms/chorus/pkg/pgtest"
	"github.com/chorus-sms/chorus/pkg/redistest"
	"github.com/chorus-sms/chorus/pkg/twilio"
	messagingv1 "github.com/chorus-sms/chorus/proto/gen/go/messaging/v1"
	"github.com/chorus-sms/chorus/services/messaging/internal/msgtest"
)

// Real Twilio webhook bodies (from Twilio's documentation, numbers replaced): an incoming SMS
// and a status callback saying the recipient unsubscribed.
const (
	twilioInboundSTOP = "ToCountry=US&ToState=DC&SmsMessageSid=SM8c6e2b1f0d4a4e7b9c3d5f1a2b4c6d8e&NumMedia=0" +
		"&ToCity=WASHINGTON&FromZip=20001&SmsSid=SM8c6e2b1f0d4a4e7b9c3d5f1a2b4c6d8e&FromState=DC&SmsStatus=received" +
		"&FromCity=WASHINGTON&Body=STOP&FromCountry=US&To=%2B12025550100&ToZip=20001&NumSegments=1" +
		"&MessageSid=SM8c6e2b1f0d4a4e7b9c3d5f1a2b4c6d8e&AccountSid=ACtest&From=%2B12025550143&ApiVersion=2010-04-01"
	twilioStatusUnsubscribed = "ErrorCode=21610&SmsSid=SM1f0e8ae6ade43cb3c0ce4525424e404f&SmsStatus=undelivered" +
		"&MessageStatus=undelivered&To=%2B12025550143&MessageSid=SM1f0e8ae6ade43cb3c0ce4525424e404f" +
		"&AccountSid=ACtest&From=%2B12025550100&ApiVersion=2010-04-01"
)

// fakeTwilio is Twilio's message API: it accepts every message and remembers where each went.
type fakeTwilio struct {
	mu  sync.Mutex
	sid int
	to  []string
}

func TestMain(m *testing.M) {
	pgtest.Main(m, redistest.Close)
}

func (f *fakeTwilio) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	f.mu.Lock()
	f.sid++
	f.to = append(f.to, r.PostForm.Get("To"))
	sid := "SM" + strings.Repeat("0", 31) + string(rune('a'+f.sid%26))
	f.mu.Unlock()
	twilio.Accept(w, sid)
}

func (f *fakeTwilio) sent() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.to...)
}

// env is messaging with the twilio carrier, a Twilio organization owning +12025550100 and a
// sandbox organization owning +12025550101.
type env struct {
	peers           *msgtest.Peers
	msg             messagingv1.MessagingServiceClient
	db              *pgxpool.Pool
	twilio          *fakeTwilio
	twilioOrg, sbox uuid.UUID
}

const (
	twilioNumber  = "+12025550100"
	sandboxNumber = "+12025550101"
	sender        = "+12025550143"
)

func newEnv(t *testing.T) *env {
	t.Helper()
	e := &env{peers: msgtest.StartPeers(t), twilio: &fakeTwilio{}}
	api := httptest.NewServer(e.twilio)
	t.Cleanup(api.Close)
	e.msg = e.peers.Messaging(t, api.URL)
	e.db = e.peers.MessagingDB(t)
	e.twilioOrg = e.peers.Org(t, "Acme", false)
	e.sbox = e.peers.Org(t, "Sandboxed", true)
	e.addNumber(t, e.twilioOrg, twilioNumber)
	e.addNumber(t, e.sbox, sandboxNumber)
	return e
}

func (e *env) addNumber(t *testing.T, org uuid.UUID, number string) {
	t.Helper()
	_, err := e.msg.AddNumber(context.Background(), &messagingv1.AddNumberRequest{OrganizationId: org.String(), Number: number, IsDefault: true})
	require.NoError(t, err)
}

// post signs form with token as the carrier would for path and hands it to HandleWebhook.
func (e *env) post(provider, token, path string, kind messagingv1.WebhookKind, form url.Values) (*messagingv1.HandleWebhookResponse, error) {
	req := &messagingv1.HandleWebhookRequest{
		Provider: provider, Kind: kind, PathAndQuery: path,
		Signature: twilio.Sign(token, msgtest.PublicURL+path, form),
	}
	for k, vs := range form {
		for _, v := range vs {
			req.Params = append(req.Params, &messagingv1.FormParam{Key: k, Value: v})
		}
	}
	return e.msg.HandleWebhook(context.Background(), req)
}

func (e *env) inbound(provider, token string, form url.Values) (*messagingv1.HandleWebhookResponse, error) {
	return e.post(provider, token, "/webhooks/"+provider+"/inbound", messagingv1.WebhookKind_WEBHOOK_KIND_INBOUND, form)
}

// count counts the messages matching where (SQL over the messages table).
func (e *env) count(t *testing.T, where string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, e.db.QueryRow(context.Background(), `SELECT count(*) FROM messages WHERE `+where, args...).Scan(&n))
	return n
}

func parse(t *testing.T, body string) url.Values {
	t.Helper()
	v, err := url.ParseQuery(body)
	require.NoError(t, err)
	return v
}

func with(v url.Values, kv ...string) url.Values {
	out := url.Values{}
	for k, vs := range v {
		out[k] = append([]string(nil), vs...)
	}
	for i := 0; i < len(kv); i += 2 {
		out.Set(kv[i], kv[i+1])
	}
	return out
}

// Each case is a carrier's inbound webhook: what messaging answers and what it recorded.
func TestWebhookInbound(t *testing.T) {
	e := newEnv(t)
	stop := parse(t, twilioInboundSTOP)
	sandboxText := with(stop, "To", sandboxNumber, "Body", "hello", "MessageSid", "SM"+strings.Repeat("1", 32))
	long := strings.Repeat("1", 5000)
	tests := []struct {
		name            string
		provider, token string
		form            url.Values
		code            codes.Code
		field           string // the field a 400 names
		stored          int    // incoming messages of the receiving org afterwards
	}{
		{name: "twilio STOP to a twilio org's number", provider: "twilio", token: msgtest.TwilioToken, form: stop, code: codes.OK, stored: 1},
		{name: "redelivered", provider: "twilio", token: msgtest.TwilioToken, form: stop, code: codes.OK, stored: 1},
		{name: "sandbox text to a sandbox org's number", provider: "sandbox", token: msgtest.SandboxToken, form: sandboxText, code: codes.OK, stored: 1},
		{name: "wrong signature", provider: "twilio", token: "not-the-token", form: with(stop, "MessageSid", "SM"+strings.Repeat("2", 32)), code: codes.PermissionDenied, stored: 1},
		{name: "unknown number", provider: "twilio", token: msgtest.TwilioToken, form: with(stop, "To", "+12025550199"), code: codes.NotFound, stored: 1},
		{name: "5,000-character MessageSid", provider: "twilio", token: msgtest.TwilioToken, form: with(stop, "MessageSid", "SM"+long), code: codes.InvalidArgument, field: "MessageSid", stored: 1},
		{name: "5,000-character From", provider: "twilio", token: msgtest.TwilioToken, form: with(stop, "MessageSid", "SM"+strings.Repeat("3", 32), "From", "+"+long), code: codes.InvalidArgument, field: "From", stored: 1},
		{name: "From not a number", provider: "twilio", token: msgtest.TwilioToken, form: with(stop, "MessageSid", "SM"+strings.Repeat("4", 32), "From", "<script>"), code: codes.InvalidArgument, field: "From", stored: 1},
		{name: "Body too long", provider: "twilio", token: msgtest.TwilioToken, form: with(stop, "MessageSid", "SM"+strings.Repeat("5", 32), "Body", strings.Repeat("a", 1601)), code: codes.InvalidArgument, field: "Body", stored: 1},
		{name: "media URL not http", provider: "twilio", token: msgtest.TwilioToken, form: with(stop, "MessageSid", "SM"+strings.Repeat("6", 32), "NumMedia", "1", "MediaUrl0", "javascript:alert(1)"), code: codes.InvalidArgument, field: "MediaUrl0", stored: 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := e.inbound(tc.provider, tc.token, tc.form)
			require.Equal(t, tc.code, status.Code(err), "%v", err)
			if tc.code == codes.OK {
				assert.Equal(t, "text/xml", res.GetContentType())
				assert.Contains(t, res.GetBody(), "<Response></Response>")
			}
			if tc.field != "" {
				assert.Contains(t, apierr.FieldViolations(err), tc.field)
			}
			org := e.twilioOrg
			if tc.provider == "sandbox" {
				org = e.sbox
			}
			assert.Equal(t, tc.stored, e.count(t, `organization_id = $1 AND direction = 'incoming'`, org))
		})
	}
	optedIn, found := e.peers.Consent(t, e.twilioOrg, sender)
	assert.True(t, found)
	assert.False(t, optedIn, "the STOP opted the contact out")
	assert.Equal(t, 0, e.count(t, `length(provider_message_id) > 64 OR length(contact_phone) > 32`))
	require.Eventually(t, func() bool { return len(e.twilio.sent()) == 1 }, 10*time.Second, 20*time.Millisecond, "one confirmation goes out through Twilio")
}

// The sandbox's signature speaks only for sandbox organizations: a sandbox-signed webhook
// naming a Twilio organization's number is answered as for an unknown number and changes
// nothing (no thread, no consent change, no answer sent through Twilio), and the other way round.
func TestWebhookFromAnotherCarrierIsAnUnknownNumber(t *testing.T) {
	e := newEnv(t)
	stop := parse(t, twilioInboundSTOP)
	for _, body := range []string{"STOP", "HELP"} {
		_, err := e.inbound("sandbox", msgtest.SandboxToken, with(stop, "Body", body, "From", "+33612345678", "MessageSid", "SM"+strings.Repeat(body[:1], 32)))
		assert.Equal(t, codes.NotFound, status.Code(err), "%v", err)
	}
	_, err := e.inbound("twilio", msgtest.TwilioToken, with(stop, "To", sandboxNumber))
	assert.Equal(t, codes.NotFound, status.Code(err), "%v", err)

	assert.Equal(t, 0, e.count(t, `true`), "nothing recorded")
	_, found := e.peers.Consent(t, e.twilioOrg, "+33612345678")
	assert.False(t, found, "no contact was opted out")
	time.Sleep(200 * time.Millisecond) // a queued answer would have gone out by now
	assert.Empty(t, e.twilio.sent(), "nothing sent through Twilio")
}

// A carrier's message id is unique per receiving organization, not across all of them: one
// organization's traffic cannot shadow another's.
func TestWebhookInboundDedupeIsPerOrganization(t *testing.T) {
	e := newEnv(t)
	other := e.peers.Org(t, "Other sandbox", true)
	e.addNumber(t, other, "+12025550102")
	form := with(parse(t, twilioInboundSTOP), "Body", "hello", "MessageSid", "SM"+strings.Repeat("7", 32))
	for _, to := range []string{sandboxNumber, "+12025550102", "+12025550102"} {
		_, err := e.inbound("sandbox", msgtest.SandboxToken, with(form, "To", to))
		require.NoError(t, err)
	}
	assert.Equal(t, 1, e.count(t, `organization_id = $1`, e.sbox))
	assert.Equal(t, 1, e.count(t, `organization_id = $1`, other), "stored once in each organization")
}

// Twilio's status callback with ErrorCode 21610 (the recipient unsubscribed) opts the contact
// out, as the same code on a synchronous rejection does.
func TestWebhookStatusUnsubscribedOptsOut(t *testing.T) {
	e := newEnv(t)
	// An opted-in contact, and a message to it that Twilio later reports undelivered with 21610.
	e.peers.Contact(t, e.twilioOrg, sender)
	id := uuid.Must(uuid.NewV7())
	_, err := e.db.Exec(context.Background(), `INSERT INTO messages (id, organization_id, direction, contact_phone, our_number,
		body, status, provider, provider_message_id, source_kind, created_at, thread_at)
		VALUES ($1, $2, 'outgoing', $3, $4, 'hello', 'sent', 'twilio', 'SM1f0e8ae6ade43cb3c0ce4525424e404f', 'reply', now(), now())`,
		id, e.twilioOrg, sender, twilioNumber)
	require.NoError(t, err)

	path := "/webhooks/twilio/status?messageId=" + id.String()
	_, err = e.post("sandbox", msgtest.SandboxToken, "/webhooks/sandbox/status?messageId="+id.String(), messagingv1.WebhookKind_WEBHOOK_KIND_STATUS, parse(t, twilioStatusUnsubscribed))
	assert.Equal(t, codes.NotFound, status.Code(err), "another carrier's callback: %v", err)
	optedIn, _ := e.peers.Consent(t, e.twilioOrg, sender)
	require.True(t, optedIn)

	res, err := e.post("twilio", msgtest.TwilioToken, path, messagingv1.WebhookKind_WEBHOOK_KIND_STATUS, parse(t, twilioStatusUnsubscribed))
	require.NoError(t, err)
	assert.Equal(t, "text/plain", res.GetContentType())
	optedIn, _ = e.peers.Consent(t, e.twilioOrg, sender)
	assert.False(t, optedIn, "21610 opted the contact out")
	assert.Equal(t, 1, e.count(t, `id = $1 AND status = 'undelivered' AND error_code = '21610'`, id))

	_, err = e.post("twilio", msgtest.TwilioToken, "/webhooks/twilio/status?messageId="+uuid.NewString(), messagingv1.WebhookKind_WEBHOOK_KIND_STATUS, parse(t, twilioStatusUnsubscribed))
	assert.Equal(t, codes.NotFound, status.Code(err), "a callback for no message of ours")
}
