package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/chorus-sms/chorus/gateway/openapi"
)

// The contract is the OpenAPI document the gateway serves (the embedded bytes it serves at
// /openapi.json; TestServedDocumentIsTheContract holds the two equal). Every response the
// tests receive from a gateway is validated against it: its status must be declared for the
// operation (undeclared statuses fail), its declared headers present and its body valid. A
// violation fails the test that made the call.
type contract struct {
	doc    *openapi3.T
	router routers.Router
}

var loadContract = sync.OnceValues(func() (*contract, error) {
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(openapi.Spec)
	if err != nil {
		return nil, fmt.Errorf("load the OpenAPI document: %w", err)
	}
	if err := doc.Validate(context.Background()); err != nil {
		return nil, fmt.Errorf("the OpenAPI document is invalid: %w", err)
	}
	router, err := gorillamux.NewRouter(doc)
	if err != nil {
		return nil, fmt.Errorf("route the OpenAPI document: %w", err)
	}
	// Bodies the gateway answers besides JSON: the carrier's TwiML, the metrics text and the
	// API reference's page and assets.
	for _, ct := range []string{"text/xml", "application/xml", "application/openmetrics-text", "text/html", "text/javascript", "text/css"} {
		openapi3filter.RegisterBodyDecoder(ct, openapi3filter.PlainBodyDecoder)
	}
	return &contract{doc: doc, router: router}, nil
})

// check validates one answer of the gateway to req.
func (c *contract) check(req *http.Request, status int, header http.Header, body []byte) error {
	route, params, err := c.router.FindRoute(req)
	switch {
	case errors.Is(err, routers.ErrMethodNotAllowed):
		return c.checkMethodNotAllowed(req, status, header, body)
	case errors.Is(err, routers.ErrPathNotFound):
		if status != http.StatusNotFound {
			return fmt.Errorf("the document has no such path, so the answer must be 404, not %d", status)
		}
		return c.checkErrorBody(body)
	case err != nil:
		return err
	}
	if req.Method == http.MethodHead {
		return checkHead(route, status, header, body)
	}
	opts := &openapi3filter.Options{IncludeResponseStatus: true, MultiError: true, AuthenticationFunc: openapi3filter.NoopAuthenticationFunc}
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{Request: req, PathParams: params, Route: route, Options: opts},
		Status:                 status,
		Header:                 header,
		Options:                opts,
	}
	in.SetBodyBytes(body)
	return openapi3filter.ValidateResponse(req.Context(), in)
}

// checkHead checks a HEAD answer, which openapi3filter.ValidateResponse passes unread: its
// status must be declared, the headers its response declares required must be there, and it
// has no body.
func checkHead(route *routers.Route, status int, header http.Header, body []byte) error {
	res := route.Operation.Responses.Status(status)
	if res == nil || res.Value == nil {
		return fmt.Errorf("HEAD answered %d, which the document does not declare", status)
	}
	for name, h := range res.Value.Headers {
		if h.Value != nil && h.Value.Required && header.Get(name) == "" {
			return fmt.Errorf("HEAD %d lacks the required header %s", status, name)
		}
	}
	if len(body) != 0 {
		return fmt.Errorf("HEAD answered a body of %d bytes", len(body))
	}
	return nil
}

// checkMethodNotAllowed holds a 405 to components.responses.405: the error body and an Allow
// header naming exactly the methods the document declares for the path.
func (c *contract) checkMethodNotAllowed(req *http.Request, status int, header http.Header, body []byte) error {
	if status != http.StatusMethodNotAllowed {
		return fmt.Errorf("the document declares no %s on this path, so the answer must be 405, not %d", req.Method, status)
	}
	var want []string
	for _, m := range []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"} {
		probe := req.Clone(req.Context())
		probe.Method = m
		if _, _, err := c.router.FindRoute(probe); err == nil {
			want = append(want, m)
		}
	}
	var got []string
	for m := range strings.SplitSeq(header.Get("Allow"), ",") {
		if m = strings.TrimSpace(m); m != "" {
			got = append(got, m)
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		return fmt.Errorf("405 Allow is %q, the document declares %v for the path", header.Get("Allow"), want)
	}
	return c.checkErrorBody(body)
}

func (c *contract) checkErrorBody(body []byte) error {
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return fmt.Errorf("error body is not JSON: %w", err)
	}
	if err := c.doc.Components.Schemas["Error"].Value.VisitJSON(v); err != nil {
		return fmt.Errorf("error body does not match components.schemas.Error: %w", err)
	}
	return nil
}

// gateways are the base URLs of the gateways the tests started; answers from anything else
// (a fake carrier, the JWKS server) are not the contract's business.
var gateways sync.Map // host:port -> true

// contractTransport validates every answer of a gateway that passes through it and hands each
// violation to report.
type contractTransport struct {
	next   http.RoundTripper
	report func(error)
}

func (tr contractTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := tr.next.RoundTrip(req)
	if err != nil {
		return res, err
	}
	if _, ok := gateways.Load(req.URL.Host); !ok {
		return res, nil
	}
	body, err := io.ReadAll(res.Body)
	_ = res.Body.Close()
	if err != nil {
		return nil, err
	}
	res.Body = io.NopCloser(bytes.NewReader(body))
	c, err := loadContract()
	if err == nil {
		err = c.check(req, res.StatusCode, res.Header, body)
	}
	if err != nil {
		tr.report(fmt.Errorf("OpenAPI contract: %s %s answered %d %s: %w", req.Method, req.URL.RequestURI(), res.StatusCode, truncate(body), err))
	}
	return res, nil
}

func truncate(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "..."
	}
	return string(b)
}

// testTransport validates against the contract and fails t on a violation.
func testTransport(t *testing.T) http.RoundTripper {
	return contractTransport{next: baseTransport, report: func(err error) { t.Error(err) }}
}

// baseTransport is the transport under the validation, captured before TestMain wraps
// http.DefaultTransport (which only catches calls made without a test's client).
var baseTransport = http.DefaultTransport

// strayViolations collects violations seen by http.DefaultTransport, outside any test's
// client; TestMain fails the run on them.
var strayViolations struct {
	sync.Mutex
	errs []error
}

func guardDefaultTransport() {
	http.DefaultTransport = contractTransport{next: baseTransport, report: func(err error) {
		strayViolations.Lock()
		defer strayViolations.Unlock()
		strayViolations.errs = append(strayViolations.errs, err)
	}}
}

// failOnStrayViolations ends the run as failed when a call outside any test's client broke the
// contract.
func failOnStrayViolations() {
	strayViolations.Lock()
	defer strayViolations.Unlock()
	for _, err := range strayViolations.errs {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
	}
	if len(strayViolations.errs) > 0 {
		os.Exit(1)
	}
}

// registerGateway makes answers from the gateway at baseURL subject to the contract until the
// test ends (its port may then serve something else).
func registerGateway(t *testing.T, baseURL string) {
	t.Helper()
	u, err := url.Parse(baseURL)
	if err != nil {
		t.Fatalf("gateway URL %q: %v", baseURL, err)
	}
	gateways.Store(u.Host, true)
	t.Cleanup(func() { gateways.Delete(u.Host) })
}

// TestContractRejectsDrift serves answers the document does not declare from a stand-in
// gateway and checks the validation catches each, and passes a conforming one.
func TestContractRejectsDrift(t *testing.T) {
	t.Parallel()
	contact := func(email any) map[string]any {
		return map[string]any{
			"id": "0190c0de-0000-7000-8000-000000000001", "organizationId": "0190c0de-0000-7000-8000-000000000002",
			"phone": "+12025550143", "email": email, "firstName": "Ada", "lastName": "", "address": "", "city": "",
			"state": "", "zip": "", "tags": []string{}, "customFields": map[string]any{}, "isTextable": nil,
			"isOptedIn": true, "optedOutAt": nil, "timezone": "", "isStarred": false, "isArchived": false,
			"createdAt": "2026-01-02T03:04:05Z", "updatedAt": "2026-01-02T03:04:05Z",
		}
	}
	errBody := map[string]any{"error": map[string]any{"code": "METHOD_NOT_ALLOWED", "message": "no", "requestId": "r1"}}
	answers := map[string]struct {
		status int
		header map[string]string
		body   any
	}{
		"GET /api/contacts/1":   {200, nil, contact("ada@example.com")}, // conforms
		"GET /api/contacts/2":   {200, nil, contact(nil)},               // a string field null
		"POST /api/segments":    {200, nil, map[string]any{}},           // 200 where 201 is declared
		"GET /api/contacts/3":   {418, nil, errBody},                    // an undeclared status
		"PUT /api/contacts":     {405, nil, errBody},                    // 405 without Allow
		"PATCH /api/segments/4": {405, map[string]string{"Allow": "GET"}, errBody},
		"GET /api/contacts/5":   {200, nil, map[string]any{"id": "x"}}, // fields missing
		"HEAD /healthz":         {200, nil, nil},                       // conforms
		"HEAD /readyz":          {418, nil, nil},                       // an undeclared status on HEAD
		"HEAD /l/abc":           {302, nil, nil},                       // a redirect without Location
	}
	stub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := answers[r.Method+" "+r.URL.Path]
		for k, v := range a.header {
			w.Header().Set(k, v)
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(a.status)
		_ = json.NewEncoder(w).Encode(a.body)
	}))
	t.Cleanup(stub.Close)
	srv := stub.URL
	registerGateway(t, srv)
	for call := range answers {
		method, path, _ := strings.Cut(call, " ")
		var violation error
		client := &http.Client{Transport: contractTransport{next: baseTransport, report: func(err error) { violation = err }}}
		req, err := http.NewRequest(method, srv+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = res.Body.Close()
		if call == "GET /api/contacts/1" || call == "HEAD /healthz" {
			if violation != nil {
				t.Errorf("%s: a conforming answer was rejected: %v", call, violation)
			}
			continue
		}
		if violation == nil {
			t.Errorf("%s: a drifted answer passed the contract", call)
		}
	}
}

// Wrong methods and unknown paths answer as the contract says: 405 with an Allow header naming
// exactly the documented methods of the path (the transport checks it), 404 off the document.
func TestMethodMismatchesAnswerAsDocumented(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	c := e.newMember("write")
	for _, call := range []struct{ method, path string }{
		{"DELETE", "/api/contacts"},
		{"POST", "/api/contacts/0190d1f8-0000-7000-8000-00000000abcd"},
		{"GET", "/api/conversations/%2B12025550143/reply"},
		{"PUT", "/api/billing/status"},
		{"POST", "/healthz"},
		{"GET", "/webhooks/sandbox/status"},
		{"DELETE", "/l/abcdefgh"},
	} {
		res := c.do(call.method, call.path, nil)
		if res.Status != http.StatusMethodNotAllowed || res.Header.Get("Allow") == "" {
			t.Errorf("%s %s: %d Allow %q, want 405 with Allow", call.method, call.path, res.Status, res.Header.Get("Allow"))
		}
	}
	for _, path := range []string{"/healthz", "/readyz", "/openapi.json"} {
		if res := c.do("HEAD", path, nil); res.Status != http.StatusOK {
			t.Errorf("HEAD %s: %d", path, res.Status)
		}
	}
	if res := c.do("HEAD", "/l/ZZZZZZZZ", nil); res.Status != http.StatusNotFound {
		t.Errorf("HEAD /l/ZZZZZZZZ: %d, want 404", res.Status)
	}
	if res := c.do("GET", "/api/nothing-here", nil); res.Status != http.StatusNotFound {
		t.Errorf("GET /api/nothing-here: %d, want 404", res.Status)
	}
}
