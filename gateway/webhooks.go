package gateway

import (
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/chorus-sms/chorus/pkg/apierr"
	messagingv1 "github.com/chorus-sms/chorus/proto/gen/go/messaging/v1"
)

// maxWebhookBody bounds a carrier callback's form; real ones are a few KiB.
const maxWebhookBody = 64 << 10

const (
	signatureHeader = "X-Twilio-Signature"
	formMediaType   = "application/x-www-form-urlencoded"
)

// A body that is not a form is 415, not 400: nothing in it was read, and a carrier account
// misconfigured to post JSON gets a status that names the problem.
var unsupportedMediaType = apiError{
	Status: http.StatusUnsupportedMediaType, Code: apierr.ReasonUnsupportedMediaType,
	Message: "the body must be " + formMediaType,
}

var errMalformedForm = errors.New("malformed form body")

// webhook serves POST /webhooks/{provider}/inbound and /status: the carrier's form goes to the
// messaging service as received (path and query as sent, fields in order, the signature
// header), which checks the signature before anything is stored, and its answer (TwiML, for
// Twilio) goes back to the carrier as is.
func (p *publicRoutes) webhook(provider string, kind messagingv1.WebhookKind) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			allowOnly(w, r, http.MethodPost)
			return
		}
		if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != formMediaType {
			writeError(w, r, unsupportedMediaType)
			return
		}
		params, e, ok := readForm(w, r)
		if !ok {
			writeError(w, r, e)
			return
		}
		res, err := p.messaging.HandleWebhook(withRequestID(r.Context()), &messagingv1.HandleWebhookRequest{
			Provider:     provider,
			Kind:         kind,
			PathAndQuery: r.URL.RequestURI(),
			// A header may carry bytes that are not UTF-8, which a proto string cannot; such a
			// signature cannot match anyway, so the service refuses it like any wrong one.
			Signature: strings.ToValidUTF8(r.Header.Get(signatureHeader), "\uFFFD"),
			Params:    params,
		})
		if err != nil {
			p.fail(w, r, err)
			return
		}
		ct := res.GetContentType()
		if ct == "" {
			ct = "text/plain; charset=utf-8"
		}
		w.Header().Set("Content-Type", ct)
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, res.GetBody())
	})
}

// readForm reads the request's form body, at most maxWebhookBody bytes. On failure it returns
// the error to answer and false.
func readForm(w http.ResponseWriter, r *http.Request) ([]*messagingv1.FormParam, apiError, bool) {
	if r.ContentLength > maxWebhookBody {
		return nil, payloadTooLarge, false
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxWebhookBody))
	if tooLarge := (*http.MaxBytesError)(nil); errors.As(err, &tooLarge) {
		return nil, payloadTooLarge, false
	}
	if err != nil {
		return nil, apiError{Status: http.StatusBadRequest, Code: apierr.ReasonValidation, Message: "the request body could not be read"}, false
	}
	params, err := parseForm(string(body))
	if err != nil {
		return nil, apiError{Status: http.StatusBadRequest, Code: apierr.ReasonValidation, Message: err.Error()}, false
	}
	return params, apiError{}, true
}

// parseForm decodes a urlencoded body as url.ParseQuery does, keeping the fields in the order
// received, which url.Values cannot. Names and values must be valid UTF-8 (proto strings).
func parseForm(body string) ([]*messagingv1.FormParam, error) {
	var params []*messagingv1.FormParam
	for pair := range strings.SplitSeq(body, "&") {
		if pair == "" {
			continue
		}
		if strings.Contains(pair, ";") { // as url.ParseQuery: a ";" separator is ambiguous
			return nil, errMalformedForm
		}
		rawKey, rawValue, _ := strings.Cut(pair, "=")
		key, err := url.QueryUnescape(rawKey)
		if err != nil {
			return nil, errMalformedForm
		}
		value, err := url.QueryUnescape(rawValue)
		if err != nil {
			return nil, errMalformedForm
		}
		if !utf8.ValidString(key) || !utf8.ValidString(value) {
			return nil, errors.New("the form body must be valid UTF-8")
		}
		params = append(params, &messagingv1.FormParam{Key: key, Value: value})
	}
	return params, nil
}
