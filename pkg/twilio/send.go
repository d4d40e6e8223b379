package twilio

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/chorus-sms/chorus/pkg/wait"
)

// maxRetryAfter is the longest Send waits when Twilio asks it to slow down. Asked to wait
// longer, it gives up with ErrUnavailable and leaves the retry to the caller's queue instead
// of holding a worker.
const maxRetryAfter = 10 * time.Second

// SendRequest is one message to create through the Messages API.
type SendRequest struct {
	From, To  string // E.164
	Body      string
	MediaURLs []string
	// SendAsMMS sends a text without media as an MMS, which Twilio would send as SMS; a
	// message with media is an MMS anyway.
	SendAsMMS      bool
	StatusCallback string // the URL Twilio posts the message's status changes to
	// ValidityPeriod, when positive, is how long Twilio may keep trying to deliver.
	ValidityPeriod time.Duration
}

// What Send reports when Twilio did not take the message.
var (
	// ErrOutcomeUnknown means the request may have reached Twilio but no answer came
	// (timeout, connection lost after sending): resending blindly could text the person
	// twice; the status callback settles it.
	ErrOutcomeUnknown = errors.New("twilio's outcome unknown")

	// ErrUnavailable means Twilio did not take the message (rate limited, server errors,
	// unreachable) after all attempts; nothing was sent and a later retry is safe.
	ErrUnavailable = errors.New("twilio unavailable")

	// ErrMisconfigured means Twilio refused our credentials or account; every message will
	// fail the same way until the configuration is fixed.
	ErrMisconfigured = errors.New("twilio refused the account's configuration")
)

// RejectedError is Twilio refusing the message; nothing was sent, and sending the same
// message again will be refused again.
type RejectedError struct {
	Code    string // Twilio's error code, e.g. "21211"; empty when its answer had none
	Message string
}

func (e *RejectedError) Error() string {
	if e.Code == "" {
		return "twilio rejected the message: " + e.Message
	}
	return fmt.Sprintf("twilio rejected the message: %s (code %s)", e.Message, e.Code)
}

// Send asks Twilio to send m and returns the message's sid. Attempts that provably sent
// nothing (rate limits, server errors, failed connects) are retried with backoff; once a
// request may have reached Twilio it is never repeated, because Twilio has no idempotency key
// and a repeat could text the person twice. Besides the context's error, it fails with a
// *RejectedError, ErrOutcomeUnknown, ErrUnavailable or ErrMisconfigured.
func (c *Client) Send(ctx context.Context, m SendRequest) (sid string, err error) {
	form := url.Values{"To": {m.To}, "From": {m.From}}
	if m.Body != "" {
		form.Set("Body", m.Body)
	}
	for _, u := range m.MediaURLs {
		form.Add("MediaUrl", u)
	}
	if m.SendAsMMS && len(m.MediaURLs) == 0 {
		// Twilio sends a text without media as SMS unless told otherwise.
		form.Set("SendAsMms", "true")
	}
	if m.StatusCallback != "" {
		form.Set("StatusCallback", m.StatusCallback)
	}
	if vp, ok := validityPeriod(m.ValidityPeriod); ok {
		form.Set("ValidityPeriod", strconv.Itoa(vp))
	}
	body := form.Encode()

	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return "", err
		}
		sid, err := c.post(ctx, body)
		var te *transientError
		if !errors.As(err, &te) {
			return sid, err
		}
		if attempt >= c.cfg.MaxAttempts {
			return "", fmt.Errorf("%w after %d attempts: %w", ErrUnavailable, attempt, te)
		}
		if te.retryAfter > maxRetryAfter {
			return "", fmt.Errorf("%w, asked to retry after %s: %w", ErrUnavailable, te.retryAfter, te)
		}
		if !wait.For(ctx, max(c.backoff(attempt), te.retryAfter)) {
			return "", fmt.Errorf("%w after %d attempts (%w): %w", ErrUnavailable, attempt, te, ctx.Err())
		}
	}
}

// transientError is a failed attempt that provably sent nothing, so it may be repeated.
type transientError struct {
	reason     string
	retryAfter time.Duration // the server's Retry-After, zero when it gave none
}

func (e *transientError) Error() string { return e.reason }

// post makes one attempt. Besides the sid, it returns a *transientError, a *RejectedError,
// ErrMisconfigured or ErrOutcomeUnknown.
func (c *Client) post(ctx context.Context, body string) (string, error) {
	var progress sendProgress
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, progress.trace()),
		http.MethodPost, c.endpoint, strings.NewReader(body))
	if err != nil {
		return "", fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.SetBasicAuth(c.cfg.AccountSID, c.cfg.AuthToken)

	resp, err := c.cfg.HTTPClient.Do(req)
	if err != nil {
		// Retry only on proof that the request never left: the connection was never made, or
		// writing it failed. Anything else (a timeout or reset while waiting for the answer,
		// or an error we cannot place) may have sent the message.
		if progress.neverSent() {
			return "", &transientError{reason: err.Error()}
		}
		return "", fmt.Errorf("%w: %w", ErrOutcomeUnknown, err)
	}
	defer resp.Body.Close()
	raw, readErr := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))

	switch code := resp.StatusCode; {
	case code >= 200 && code < 300:
		var msg struct {
			SID string `json:"sid"`
		}
		if readErr != nil {
			return "", fmt.Errorf("%w: %s but reading the answer failed: %w", ErrOutcomeUnknown, resp.Status, readErr)
		}
		if err := json.Unmarshal(raw, &msg); err != nil || msg.SID == "" {
			return "", fmt.Errorf("%w: %s without a message sid", ErrOutcomeUnknown, resp.Status)
		}
		return msg.SID, nil
	case code == http.StatusGatewayTimeout:
		// A proxy gave up waiting for Twilio, which may still have taken the message.
		return "", fmt.Errorf("%w: %s", ErrOutcomeUnknown, resp.Status)
	case code == http.StatusTooManyRequests || code == http.StatusRequestTimeout || code >= 500:
		return "", &transientError{
			reason:     resp.Status + describeError(raw),
			retryAfter: retryAfter(resp.Header.Get("Retry-After")),
		}
	case code == http.StatusUnauthorized || code == http.StatusForbidden || code == http.StatusNotFound ||
		code >= 300 && code < 400:
		return "", fmt.Errorf("%w: %s%s", ErrMisconfigured, resp.Status, describeError(raw))
	default:
		return "", rejection(resp.Status, raw)
	}
}

func rejection(status string, raw []byte) *RejectedError {
	var e apiError
	if json.Unmarshal(raw, &e) != nil || e.Code == 0 {
		return &RejectedError{Message: status}
	}
	return &RejectedError{Code: strconv.Itoa(e.Code), Message: e.Message}
}

// retryAfter reads a Retry-After header given in seconds or as an HTTP date.
func retryAfter(h string) time.Duration {
	if h == "" {
		return 0
	}
	if s, err := strconv.Atoi(strings.TrimSpace(h)); err == nil {
		return time.Duration(min(max(s, 0), 24*60*60)) * time.Second
	}
	if at, err := http.ParseTime(h); err == nil {
		return max(time.Until(at), 0)
	}
	return 0
}

// sendProgress follows one request through the transport, to tell a request that never left
// from one that may have reached Twilio. Trace hooks can run concurrently (parallel dials).
type sendProgress struct {
	mu    sync.Mutex
	state progressState
}

type progressState int

const (
	progressNone        progressState = iota // no transport event seen
	progressConnFailed                       // DNS, connect or TLS failed, no connection yet
	progressConnected                        // a connection was taken; the request may be on its way
	progressWriteFailed                      // writing the request on that connection failed
	progressWritten                          // the whole request was written
)

func (p *sendProgress) trace() *httptrace.ClientTrace {
	set := func(from []progressState, to progressState) {
		p.mu.Lock()
		defer p.mu.Unlock()
		if slices.Contains(from, p.state) {
			p.state = to
		}
	}
	connFailed := func(err error) {
		if err != nil {
			set([]progressState{progressNone}, progressConnFailed)
		}
	}
	return &httptrace.ClientTrace{
		DNSDone:          func(i httptrace.DNSDoneInfo) { connFailed(i.Err) },
		ConnectDone:      func(_, _ string, err error) { connFailed(err) },
		TLSHandshakeDone: func(_ tls.ConnectionState, err error) { connFailed(err) },
		GotConn: func(httptrace.GotConnInfo) {
			set([]progressState{progressNone, progressConnFailed, progressWriteFailed}, progressConnected)
		},
		WroteRequest: func(i httptrace.WroteRequestInfo) {
			if i.Err != nil {
				set([]progressState{progressConnected}, progressWriteFailed)
				return
			}
			set([]progressState{progressNone, progressConnFailed, progressConnected, progressWriteFailed}, progressWritten)
		},
	}
}

// neverSent reports whether the transport proved the request did not leave: no connection was
// made, or writing it failed.
func (p *sendProgress) neverSent() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.state == progressConnFailed || p.state == progressWriteFailed
}

// backoff is the wait after the n-th failed attempt: the base doubled n-1 times, drawn from
// its upper half so that senders that failed together do not retry together.
func (c *Client) backoff(n int) time.Duration {
	d := c.cfg.Backoff << min(n-1, 16)
	return d/2 + rand.N(d/2+1)
}

// maxValidity is Twilio's longest (and default) ValidityPeriod, in seconds.
const maxValidity = 36000

// validityPeriod is d as Twilio's ValidityPeriod (whole seconds, 1 to 36000, rounded down so
// the message never outlives d); ok is false when d is unset or no shorter than the default.
func validityPeriod(d time.Duration) (int, bool) {
	if d <= 0 {
		return 0, false
	}
	s := int(d / time.Second)
	if s >= maxValidity {
		return 0, false
	}
	return max(s, 1), true
}
