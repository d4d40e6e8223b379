package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/chorus-sms/chorus/pkg/apierr"
	"github.com/chorus-sms/chorus/pkg/clients"
)

// Reasons that answer 402 whatever gRPC code carries them: the caller must pay, not retry.
var paymentReasons = map[string]bool{apierr.ReasonInsufficientCredits: true, apierr.ReasonBillingSuspended: true}

// apiError is one REST error: its HTTP status and the fields of the shared error body.
type apiError struct {
	Status  int
	Code    string
	Message string
	Fields  map[string]string
	// RetryAfter is sent as Retry-After (whole seconds, at least 1) on 429.
	RetryAfter time.Duration
}

type errorBody struct {
	Error errorPayload `json:"error"`
}

type errorPayload struct {
	Code      string            `json:"code"`
	Message   string            `json:"message"`
	RequestID string            `json:"requestId"`
	Fields    map[string]string `json:"fields,omitempty"`
}

// writeError answers with e in the body every Chorus error shares.
func writeError(w http.ResponseWriter, r *http.Request, e apiError) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Del("Content-Length")
	if e.Status == http.StatusUnauthorized && h.Get("WWW-Authenticate") == "" {
		h.Set("WWW-Authenticate", wwwAuthInvalidToken)
	}
	if e.Status == http.StatusTooManyRequests {
		h.Set("Retry-After", strconv.Itoa(ceilSeconds(e.RetryAfter)))
	}
	w.WriteHeader(e.Status)
	_ = json.NewEncoder(w).Encode(errorBody{Error: errorPayload{
		Code: e.Code, Message: e.Message, RequestID: infoFrom(r.Context()).id, Fields: e.Fields,
	}})
}

// ceilSeconds rounds d up to whole seconds, never below 1: clients retrying at 0 would only be
// refused again.
func ceilSeconds(d time.Duration) int {
	return max(1, int(math.Ceil(d.Seconds())))
}

// statusDefaults is the HTTP status, default code and client-safe message of each gRPC code.
// Codes not listed are 500 INTERNAL.
var statusDefaults = map[codes.Code]apiError{
	codes.InvalidArgument:    {Status: http.StatusBadRequest, Code: apierr.ReasonValidation, Message: "invalid request"},
	codes.OutOfRange:         {Status: http.StatusBadRequest, Code: apierr.ReasonValidation, Message: "invalid request"},
	codes.FailedPrecondition: {Status: http.StatusBadRequest, Code: apierr.ReasonFailedPrecondition, Message: "the request cannot be carried out in the current state"},
	codes.Unauthenticated:    {Status: http.StatusUnauthorized, Code: apierr.ReasonUnauthenticated, Message: "authentication required"},
	codes.PermissionDenied:   {Status: http.StatusForbidden, Code: apierr.ReasonForbidden, Message: "forbidden"},
	codes.NotFound:           {Status: http.StatusNotFound, Code: apierr.ReasonNotFound, Message: "not found"},
	codes.AlreadyExists:      {Status: http.StatusConflict, Code: apierr.ReasonConflict, Message: "conflict"},
	codes.Aborted:            {Status: http.StatusConflict, Code: apierr.ReasonConflict, Message: "conflict"},
	codes.ResourceExhausted:  {Status: http.StatusTooManyRequests, Code: apierr.ReasonRateLimited, Message: "rate limit exceeded"},
	// 499 (client closed request): the caller went away, so nothing reads it, but it keeps
	// cancellations out of the 5xx numbers.
	codes.Canceled:         {Status: 499, Code: apierr.ReasonCanceled, Message: "request canceled"},
	codes.Unavailable:      {Status: http.StatusServiceUnavailable, Code: apierr.ReasonUnavailable, Message: "service unavailable, retry later"},
	codes.DeadlineExceeded: {Status: http.StatusGatewayTimeout, Code: apierr.ReasonDeadlineExceeded, Message: "request timed out"},
}

var (
	internalError   = apiError{Status: http.StatusInternalServerError, Code: apierr.ReasonInternal, Message: "internal error"}
	malformedPath   = apiError{Status: http.StatusBadRequest, Code: apierr.ReasonValidation, Message: "malformed request path"}
	payloadTooLarge = apiError{Status: http.StatusRequestEntityTooLarge, Code: apierr.ReasonPayloadTooLarge, Message: "request body too large"}
)

// fromStatus maps a gRPC error to its REST error. The code is the ErrorInfo reason when the
// service gave one. A status without a reason did not come from a service's deliberate
// apierr error (gRPC itself, a dial failure, the gateway), so its text is replaced by the
// default message: it may name internal addresses. 500s never carry the original text.
func fromStatus(err error) apiError {
	// A typed client's error: the service's own answer, which the gateway serves like the
	// mux's (its reason and message are the service's API).
	if pe := (*clients.Error)(nil); errors.As(err, &pe) {
		err = pe.Status().Err()
	}
	st := status.Convert(err)
	reason, fields := apierr.Reason(err), apierr.FieldViolations(err)
	var retry time.Duration
	for _, d := range st.Details() {
		if ri, ok := d.(*errdetails.RetryInfo); ok {
			retry = ri.GetRetryDelay().AsDuration()
		}
	}
	e, ok := statusDefaults[st.Code()]
	if !ok || (st.Code() == codes.ResourceExhausted && reason == "") {
		// A ResourceExhausted without a reason is gRPC's own (a message over the size limit),
		// not a limit a service applies: a 429 would send the client into endless retries.
		return internalError
	}
	if paymentReasons[reason] {
		e.Status = http.StatusPaymentRequired
	}
	if reason != "" {
		e.Code, e.Message = reason, st.Message()
	}
	e.Fields, e.RetryAfter = fields, retry
	return e
}

// errorHandler is the mux's error handler: backend errors, request decoding errors and bodies
// cut off by the size limit all leave through it.
func errorHandler(log *slog.Logger) runtime.ErrorHandlerFunc {
	return func(ctx context.Context, _ *runtime.ServeMux, _ runtime.Marshaler, w http.ResponseWriter, r *http.Request, err error) {
		var e apiError
		var httpErr *runtime.HTTPStatusError
		switch {
		case infoFrom(r.Context()).bodyTooLarge:
			e = payloadTooLarge
		case errors.As(err, &httpErr) && httpErr.HTTPStatus == http.StatusBadRequest:
			// The mux's own complaint, e.g. a malformed %-sequence in the path.
			e = malformedPath
		case status.Code(err) == codes.InvalidArgument && apierr.Reason(err) == "":
			// The gateway itself could not read the request (JSON body, query, path).
			e = requestParseError(ctx, r, status.Convert(err).Message())
		default:
			e = fromStatus(err)
		}
		if e.Status >= http.StatusInternalServerError {
			log.WarnContext(ctx, "backend call failed", "request_id", infoFrom(r.Context()).id, "status", e.Status, "err", err)
		}
		writeError(w, r, e)
	}
}

func methodNotAllowed(method string) apiError {
	return apiError{Status: http.StatusMethodNotAllowed, Code: apierr.ReasonMethodNotAllowed, Message: "method " + method + " is not allowed on this route"}
}

// routingErrorHandler answers requests no route matches in the shared error body.
func routingErrorHandler(_ context.Context, _ *runtime.ServeMux, _ runtime.Marshaler, w http.ResponseWriter, r *http.Request, httpStatus int) {
	switch httpStatus {
	case http.StatusNotFound:
		writeError(w, r, apiError{Status: http.StatusNotFound, Code: apierr.ReasonNotFound, Message: "no such route"})
	case http.StatusMethodNotAllowed:
		allowOnly(w, r, allowedMethods(r.URL.EscapedPath()))
	default:
		writeError(w, r, malformedPath)
	}
}
