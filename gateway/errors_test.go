package gateway_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/chorus-sms/chorus/gateway"
	"github.com/chorus-sms/chorus/pkg/apierr"
	"github.com/chorus-sms/chorus/pkg/httpcode"
	"github.com/chorus-sms/chorus/pkg/registry"
	"github.com/chorus-sms/chorus/pkg/servetest"
)

// withDetails is a status error carrying details, as a service would build it.
func withDetails(code codes.Code, msg string, details ...*errdetails.ErrorInfo) error {
	st := status.New(code, msg)
	for _, d := range details {
		st, _ = st.WithDetails(d)
	}
	return st.Err()
}

func TestServiceErrorsMapToTheSharedBody(t *testing.T) {
	t.Parallel()
	rateLimited, _ := status.New(codes.ResourceExhausted, "too many sends").WithDetails(
		&errdetails.ErrorInfo{Reason: "SEND_RATE", Domain: apierr.Domain},
		&errdetails.RetryInfo{RetryDelay: durationpb.New(2500 * time.Millisecond)},
	)
	cases := []struct {
		err        error
		status     int
		code, msg  string
		fields     map[string]any
		retryAfter string
	}{
		{err: apierr.NotFound("contact not found"), status: 404, code: "NOT_FOUND", msg: "contact not found"},
		{err: apierr.Fields{"email": "must be an email", "state": "must be a US state"}.Err(), status: 400, code: "VALIDATION_FAILED",
			fields: map[string]any{"email": "must be an email", "state": "must be a US state"}},
		{err: apierr.New(codes.InvalidArgument, "CONTACT_OPTED_OUT", "the contact opted out"), status: 400, code: "CONTACT_OPTED_OUT", msg: "the contact opted out"},
		{err: apierr.New(codes.FailedPrecondition, "NOT_A_DRAFT", "only drafts can be edited"), status: 400, code: "NOT_A_DRAFT"},
		{err: apierr.Conflict("phone and email match different contacts"), status: 409, code: "CONFLICT"},
		{err: apierr.New(codes.PermissionDenied, "FORBIDDEN", "write access is required"), status: 403, code: "FORBIDDEN"},
		{err: apierr.New(codes.Unauthenticated, "UNAUTHENTICATED", "no organization on the call"), status: 401, code: "UNAUTHENTICATED"},
		{err: apierr.New(codes.FailedPrecondition, "INSUFFICIENT_CREDITS", "not enough credits"), status: 402, code: "INSUFFICIENT_CREDITS"},
		{err: apierr.New(codes.PermissionDenied, "BILLING_SUSPENDED", "billing is suspended"), status: 402, code: "BILLING_SUSPENDED"},
		{err: rateLimited.Err(), status: 429, code: "SEND_RATE", retryAfter: "3"},
		// gRPC's own exhaustion (e.g. a response over the message size limit) is no rate limit:
		// a 429 would have the client retry something that can never succeed.
		{err: status.Error(codes.ResourceExhausted, "grpc: received message larger than max"), status: 500, code: "INTERNAL", msg: "internal error"},
		{err: apierr.New(codes.Unavailable, "PROVIDER_DOWN", "the carrier is unavailable"), status: 503, code: "PROVIDER_DOWN"},
		{err: status.Error(codes.Unavailable, "dial tcp 10.1.2.3:9102: connection refused"), status: 503, code: "UNAVAILABLE", msg: "service unavailable, retry later"},
		{err: status.Error(codes.DeadlineExceeded, "deadline exceeded after 29.99s"), status: 504, code: "DEADLINE_EXCEEDED", msg: "request timed out"},
		{err: status.Error(codes.Internal, "pq: password authentication failed for user chorus"), status: 500, code: "INTERNAL", msg: "internal error"},
		{err: withDetails(codes.Internal, "stack trace here", &errdetails.ErrorInfo{Reason: "DB_DOWN"}), status: 500, code: "INTERNAL", msg: "internal error"},
		{err: status.Error(codes.Unimplemented, "method not implemented"), status: 500, code: "INTERNAL", msg: "internal error"},
		{err: errors.New("plain error text"), status: 500, code: "INTERNAL", msg: "internal error"},
	}
	stub := &stubContacts{errs: map[string]error{}}
	ids := make([]string, len(cases))
	for i, tc := range cases {
		ids[i] = "0190d1f8-0000-7000-8000-" + strings.Repeat("0", 10) + string(rune('a'+i/10)) + string(rune('a'+i%10))
		stub.errs[ids[i]] = tc.err
	}
	e := newEnv(t, func(c *gateway.Config) { c.Peers[registry.Contacts.Name] = startContacts(t, stub) })
	e.contacts = stub
	org := e.member("reader", "read")
	for i, tc := range cases {
		t.Run(fmt.Sprintf("%02d_%s", i, tc.code), func(t *testing.T) {
			res := e.get("/api/contacts/"+ids[i], "reader", org)
			require.Equal(t, tc.status, res.status, "%s", res.body)
			body := res.apiErr(t)
			assert.Equal(t, tc.code, body["code"])
			if tc.msg != "" {
				assert.Equal(t, tc.msg, body["message"])
			}
			assert.Equal(t, res.header.Get("X-Request-Id"), body["requestId"])
			if tc.fields != nil {
				assert.Equal(t, tc.fields, body["fields"])
			} else {
				assert.NotContains(t, body, "fields", "fields are omitted when there are none")
			}
			assert.Equal(t, tc.retryAfter, res.header.Get("Retry-After"))
			if tc.status == 401 {
				assert.Equal(t, `Bearer error="invalid_token"`, res.header.Get("WWW-Authenticate"))
			}
			assert.Equal(t, "application/json", res.header.Get("Content-Type"))
		})
	}
}

func TestUnreachableServiceAnswers503(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *gateway.Config) { c.Peers[registry.Contacts.Name] = servetest.ClosedAddr(t) })
	org := e.member("reader", "read")
	res := e.get("/api/contacts", "reader", org)
	require.Equal(t, http.StatusServiceUnavailable, res.status, "%s", res.body)
	body := res.apiErr(t)
	assert.Equal(t, "UNAVAILABLE", body["code"])
	assert.NotContains(t, body["message"], "127.0.0.1", "no internal address leaks")
	assert.Contains(t, e.logs.String(), "backend call failed", "the cause is logged for operators")
}

func TestRoutingErrors(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	org := e.member("writer", "write")
	tok := e.token("writer")
	h := http.Header{"X-Request-Id": {"req-abc-123"}}

	res := e.do(request{method: http.MethodGet, path: "/api/nothing-here", token: tok, org: org, header: h})
	assert.Equal(t, http.StatusNotFound, res.status)
	assert.Equal(t, map[string]any{"code": "NOT_FOUND", "message": "no such route", "requestId": "req-abc-123"}, res.apiErr(t))
	assert.Equal(t, "req-abc-123", res.header.Get("X-Request-Id"))

	res = e.do(request{method: http.MethodGet, path: "/nowhere"})
	assert.Equal(t, http.StatusNotFound, res.status)
	assert.Equal(t, "NOT_FOUND", res.apiErr(t)["code"])

	res = e.do(request{method: http.MethodPatch, path: "/api/contacts", token: tok, org: org, body: strings.NewReader(`{}`)})
	assert.Equal(t, http.StatusMethodNotAllowed, res.status)
	assert.Equal(t, "METHOD_NOT_ALLOWED", res.apiErr(t)["code"])

	res = e.do(request{method: http.MethodPost, path: "/healthz"})
	assert.Equal(t, http.StatusMethodNotAllowed, res.status)
	assert.Equal(t, "METHOD_NOT_ALLOWED", res.apiErr(t)["code"])
}

func TestRequestIDs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	org := e.member("reader", "read")
	tok := e.token("reader")

	res := e.do(request{method: http.MethodGet, path: "/api/contacts", token: tok, org: org, header: http.Header{"X-Request-Id": {"req-abc-123"}}})
	require.Equal(t, http.StatusOK, res.status)
	assert.Equal(t, "req-abc-123", res.header.Get("X-Request-Id"))
	md, _ := e.contacts.lastCall()
	assert.Equal(t, []string{"req-abc-123"}, md.Get("x-request-id"), "forwarded to the service")

	for _, insane := range []string{"has spaces in it", strings.Repeat("x", 129), "line\\nbreak", `{"json":1}`} {
		res = e.do(request{method: http.MethodGet, path: "/api/contacts", token: tok, org: org, header: http.Header{"X-Request-Id": {insane}}})
		got := res.header.Get("X-Request-Id")
		assert.NotEqual(t, insane, got)
		assert.Len(t, got, 36, "a generated UUID replaces %q", insane)
	}
	res = e.do(request{method: http.MethodGet, path: "/api/contacts", org: org})
	assert.Len(t, res.header.Get("X-Request-Id"), 36)
	assert.Equal(t, res.header.Get("X-Request-Id"), res.apiErr(t)["requestId"], "error bodies carry the generated id too")
	assert.Contains(t, e.logs.String(), `"request_id":"req-abc-123"`)
}

func TestSuccessCodeComesFromTheServiceAndStaysInternal(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	org := e.member("writer", "write")
	res := e.do(request{method: http.MethodPost, path: "/api/contacts", token: e.token("writer"), org: org, body: strings.NewReader(`{"firstName":"Ada"}`)})
	require.Equal(t, http.StatusCreated, res.status, "%s", res.body)
	for k := range res.header {
		lk := strings.ToLower(k)
		assert.NotContains(t, lk, httpcode.Header)
		assert.NotContains(t, lk, "grpc")
		assert.NotContains(t, lk, "x-internal-note")
	}
	body := res.json(t)
	assert.Equal(t, "Ada", body["firstName"])
	assert.Equal(t, "created", body["_outcome"], "json_name is honoured")
	assert.Contains(t, body, "isTextable", "unset nullable (wrapper) fields are present")
	assert.Nil(t, body["isTextable"], "and print null")
	assert.Equal(t, "", body["phone"], "unset strings print \"\", never null")
	assert.Equal(t, false, body["isOptedIn"], "unset scalars print their zero value")

	list := e.get("/api/contacts?limit=7", "writer", org)
	require.Equal(t, http.StatusOK, list.status, "%s", list.body)
	page := list.json(t)
	assert.EqualValues(t, 7, page["limit"], "int32 is a JSON number")
	assert.Equal(t, "", page["cursor"], "no next page: the cursor string is empty, not null")
	assert.NotContains(t, page, "total", "unset proto3 optional fields are left out")
	assert.Equal(t, []any{}, page["contacts"])
}

func TestMalformedRequestsNameTheField(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	org := e.member("writer", "write")
	tok := e.token("writer")
	post := func(body string) response {
		return e.do(request{method: http.MethodPost, path: "/api/contacts", token: tok, org: org, body: strings.NewReader(body)})
	}
	cases := []struct {
		name  string
		res   response
		field string
	}{
		{"unknown field", post(`{"fristName":"x"}`), "fristName"},
		{"wrong type", post(`{"firstName":5}`), "firstName"},
		{"truncated JSON", post(`{"firstName":"x"`), ""},
		{"trailing garbage", post(`{"firstName":"x"} {"firstName":"y"}`), ""},
		{"not an object", post(`[1,2]`), ""},
		{"unparsable query number", e.get("/api/contacts?limit=abc", "writer", org), "limit"},
		{"unparsable query boolean", e.get("/api/contacts?isTextable=maybe", "writer", org), "isTextable"},
		{"snake_case query spelling", e.get("/api/contacts?include_total=perhaps", "writer", org), "includeTotal"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, http.StatusBadRequest, tc.res.status, "%s", tc.res.body)
			body := tc.res.apiErr(t)
			assert.Equal(t, "VALIDATION_FAILED", body["code"])
			assert.NotContains(t, body["message"], "proto", "library wording stays inside")
			if tc.field == "" {
				assert.NotContains(t, body, "fields")
				return
			}
			assert.Contains(t, body["fields"], tc.field, "%s", tc.res.body)
		})
	}
	_, calls := e.contacts.lastCall()
	assert.Zero(t, calls, "nothing malformed reached the service")

	res := post(``)
	assert.Equal(t, http.StatusCreated, res.status, "an empty body is an empty message: %s", res.body)
	res = e.get("/api/contacts?search="+url.QueryEscape("a b")+"&tags=vip", "writer", org)
	assert.Equal(t, http.StatusOK, res.status, "known parameters: %s", res.body)
}

// One rule for every request (issue 26): a body is one JSON value, a failure names the JSON
// path of what it refuses, and a query parameter the route does not know, or one given twice,
// is a 400 naming it.
func TestRequestsNameTheJSONPathAndTheQueryParameter(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	org := e.member("writer", "write")
	tok := e.token("writer")
	post := func(body string) response {
		return e.do(request{method: http.MethodPost, path: "/api/contacts", token: tok, org: org, body: strings.NewReader(body)})
	}
	cases := []struct {
		name    string
		res     response
		field   string
		problem string
	}{
		{"wrong type in an array", post(`{"tags":["a",5]}`), "tags[1]", "invalid value"},
		{"array expected", post(`{"tags":"vip"}`), "tags", "invalid value"},
		{"object expected", post(`{"customFields":[]}`), "customFields", "invalid value"},
		{"NUL in a nested value", post(`{"tags":["a","b\u0000c"]}`), "tags[1]", "must not contain NUL characters"},
		{"NUL in a map key", post(`{"customFields":{"a\u0000":"x"}}`), "customFields", "must not contain NUL characters"},
		{"unknown query parameter", e.get("/api/contacts?tag=vip", "writer", org), "tag", "unknown query parameter"},
		{"repeated query parameter", e.get("/api/contacts?limit=1&limit=2", "writer", org), "limit", "must be given once"},
		{"path parameter in the query", e.get("/api/contacts/"+uuid.NewString()+"?id=x", "writer", org), "id", "unknown query parameter"},
		{"unknown parameter of a body route", e.do(request{method: http.MethodPost, path: "/api/contacts?phone=1", token: tok, org: org, body: strings.NewReader(`{}`)}), "phone", "unknown query parameter"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, http.StatusBadRequest, tc.res.status, "%s", tc.res.body)
			body := tc.res.apiErr(t)
			assert.Equal(t, "VALIDATION_FAILED", body["code"])
			assert.Equal(t, map[string]any{tc.field: tc.problem}, body["fields"], "%s", tc.res.body)
			assert.Contains(t, body["message"], tc.field)
		})
	}
	res := post(`{"firstName":"x"} garbage`)
	require.Equal(t, http.StatusBadRequest, res.status, "%s", res.body)
	assert.Equal(t, "malformed JSON body", res.apiErr(t)["message"])
	_, calls := e.contacts.lastCall()
	assert.Zero(t, calls, "nothing refused reached the service")
}

// lengthless hides the length of a body so the client sends it chunked.
type lengthless struct{ io.Reader }

func TestBodiesOverTheLimitAnswer413(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	org := e.member("writer", "write")
	tok := e.token("writer")
	big := `{"firstName":"` + strings.Repeat("x", 1<<20) + `"}`

	res := e.do(request{method: http.MethodPost, path: "/api/contacts", token: tok, org: org, body: strings.NewReader(big)})
	assert.Equal(t, http.StatusRequestEntityTooLarge, res.status, "declared length")
	assert.Equal(t, "PAYLOAD_TOO_LARGE", res.apiErr(t)["code"])
	assert.NotEmpty(t, res.apiErr(t)["requestId"])

	res = e.do(request{method: http.MethodPost, path: "/api/contacts", token: tok, org: org, body: lengthless{strings.NewReader(big)}})
	assert.Equal(t, http.StatusRequestEntityTooLarge, res.status, "chunked body: %s", res.body)
	assert.Equal(t, "PAYLOAD_TOO_LARGE", res.apiErr(t)["code"])
	_, calls := e.contacts.lastCall()
	assert.Zero(t, calls)

	fits := `{"firstName":"` + strings.Repeat("x", 1<<20-100) + `"}`
	res = e.do(request{method: http.MethodPost, path: "/api/contacts", token: tok, org: org, body: lengthless{bytes.NewReader([]byte(fits))}})
	assert.Equal(t, http.StatusCreated, res.status, "a body under the limit passes")
}
