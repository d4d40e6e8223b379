package carrier

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

const (
	defaultTwilioBaseURL = "https://api.twilio.com"
	defaultMaxAttempts   = 4
	defaultBackoff       = 200 * time.Millisecond
	defaultHTTPTimeout   = 15 * time.Second

	// maxRetryAfter is the longest Send waits when Twilio asks it to slow down. Asked to wait
	// longer, it gives up with ErrUnavailable and leaves the retry to the caller's queue
	// instead of holding a worker.
	maxRetryAfter = 10 * time.Second

	maxResponseBytes = 1 << 20

	twilioCodeUnsubscribed = "21610"
)

// TwilioConfig configures the Twilio adapter.
type TwilioConfig struct {
	AccountSID, AuthToken string
	BaseURL               string // default "https://api.twilio.com"
	// HTTPClient defaults to a client with a 15s timeout. Its transport must report
	// net/http/httptrace events (http.Transport does): without them every transport error is
	// treated as ErrOutcomeUnknown.
	HTTPClient  *http.Client
	MaxAttempts int           // attempts per Send, default 4
	Backoff     time.Duration // first wait between attempts, default 200ms; doubled each time, with jitter
}

// Twilio sends messages through Twilio's Programmable Messaging REST API.
type Twilio struct {
	cfg      TwilioConfig
	base     string // BaseURL without a trailing slash: list pages name their successors by path
	endpoint string
}

var _ Provider = (*Twilio)(nil)

// NewTwilio validates cfg and fills in its defaults.
func NewTwilio(cfg TwilioConfig) (*Twilio, error) {
	if cfg.AccountSID == "" || cfg.AuthToken == "" {
		return nil, errors.New("twilio: account SID and auth token are required")
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = defaultTwilioBaseURL
	}
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("twilio: base URL %q is not an absolute http(s) URL", cfg.BaseURL)
	}
	if cfg.MaxAttempts < 0 || cfg.Backoff < 0 {
		return nil, errors.New("twilio: max attempts and backoff must not be negative")
	}
	if cfg.MaxAttempts == 0 {
		cfg.MaxAttempts = defaultMaxAttempts
	}
	if cfg.Backoff == 0 {
		cfg.Backoff = defaultBackoff
	}
	if cfg.HTTPClient == nil {
		cfg.HTTPClient = &http.Client{
			Timeout: defaultHTTPTimeout,
			// Dispatch sends many messages at once to one host: keep their connections (and TLS
			// sessions) for the next sends instead of the default transport's two.
			Transport: keepAliveTransport(),
			// Twilio does not redirect; following one would resend the message elsewhere.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		}
	}
	base := strings.TrimRight(cfg.BaseURL, "/")
	return &Twilio{
		cfg:      cfg,
		base:     base,
		endpoint: base + "/2010-04-01/Accounts/" + url.PathEscape(cfg.AccountSID) + "/Messages.json",
	}, nil
}

// idleConnsPerHost is how many idle connections to the carrier are kept for reuse.
const idleConnsPerHost = 256

// keepAliveTransport is http.DefaultTransport keeping idleConnsPerHost idle connections, or
// the default transport as it is when something (a test harness) replaced it.
func keepAliveTransport() http.RoundTripper {
	base, ok := http.DefaultTransport.(*http.Transport)
	if !ok {
		return http.DefaultTransport
	}
	t := base.Clone()
	t.MaxIdleConns, t.MaxIdleConnsPerHost = idleConnsPerHost, idleConnsPerHost
	return t
}

// Name identifies the carrier.
func (t *Twilio) Name() string { return "twilio" }

// Send asks Twilio to send m. Attempts that provably sent nothing (rate limits, server errors,
// failed connects) are retried with backoff; once a request may have reached Twilio it is
// never repeated, because Twilio has no idempotency key and a repeat could text the person
// twice.
func (t *Twilio) Send(ctx context.Context, m Outgoing) (Accepted, error) {
	form := url.Values{"To": {m.To}, "From": {m.From}}
	if m.Body != "" {
		form.Set("Body", m.Body)
	}
	for _, u := range m.MediaURLs {
		form.Add("MediaUrl", u)
	}
	if m.MMS && len(m.MediaURLs) == 0 {
		// Twilio sends a text without media as SMS unless told otherwise.
		form.Set("SendAsMms", "true")
	}
	if m.StatusCallbackURL != "" {
		form.Set("StatusCallback", m.StatusCallbackURL)
	}
	if vp, ok := twilioValidity(m.ValidityPeriod); ok {
		form.Set("ValidityPeriod", strconv.Itoa(vp))
	}
	body := form.Encode()

	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return Accepted{}, fmt.Errorf("twilio: send message %s: %w", m.MessageID, err)
		}
		acc, err := t.post(ctx, body)
		var te *transientError
		if !errors.As(err, &te) {
			if err != nil {
				return Accepted{}, fmt.Errorf("twilio: send message %s: %w", m.MessageID, err)
			}
			return acc, nil
		}
		if attempt >= t.cfg.MaxAttempts {
			return Accepted{}, fmt.Errorf("twilio: send message %s: %w after %d attempts: %w",
				m.MessageID, ErrUnavailable, attempt, te)
		}
		if te.retryAfter > maxRetryAfter {
			return Accepted{}, fmt.Errorf("twilio: send message %s: %w, asked to retry after %s: %w",
				m.MessageID, ErrUnavailable, te.retryAfter, te)
		}
		if !wait.For(ctx, max(t.backoff(attempt), te.retryAfter)) {
			return Accepted{}, fmt.Errorf("twilio: send message %s: %w after %d attempts (%w): %w",
				m.MessageID, ErrUnavailable, attempt, te, ctx.Err())
		}
	}
}

// transientError is a failed attempt that provably sent nothing, so it may be repeated.
type transientError struct {
	reason     string
	retryAfter time.Duration // the server's Retry-After, zero when it gave none
}

func (e *transientError) Error() string { return e.reason }

// post makes one attempt. Besides Accepted, it returns a *transientError, a *RejectedError,
// ErrMisconfigured or ErrOutcomeUnknown.
func (t *Twilio) post(ctx context.Context, body string) (Accepted, error) {
	var progress sendProgress
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, progress.trace()),
		http.MethodPost, t.endpoint, strings.NewReader(body))
	if err != nil {
		return Accepted{}, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	req.SetBasicAuth(t.cfg.AccountSID, t.cfg.AuthToken)

	resp, err := t.cfg.HTTPClient.Do(req)
	if err != nil {
		// Retry only on proof that the request never left: the connection was never made, or
		// writing it failed. Anything else (a timeout or reset while waiting for the answer,
		// or an error we cannot place) may have sent the message.
		if progress.neverSent() {
			return Accepted{}, &transientError{reason: err.Error()}
		}
		return Accepted{}, fmt.Errorf("%w: %w", ErrOutcomeUnknown, err)
	}
	defer resp.Body.Close()
	raw, readErr := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes))

	switch code := resp.StatusCode; {
	case code >= 200 && code < 300:
		var msg struct {
			SID string `json:"sid"`
		}
		if readErr != nil {
			return Accepted{}, fmt.Errorf("%w: %s but reading the answer failed: %w", ErrOutcomeUnknown, resp.Status, readErr)
		}
		if err := json.Unmarshal(raw, &msg); err != nil || msg.SID == "" {
			return Accepted{}, fmt.Errorf("%w: %s without a message sid", ErrOutcomeUnknown, resp.Status)
		}
		return Accepted{ProviderMessageID: msg.SID}, nil
	case code == http.StatusGatewayTimeout:
		// A proxy gave up waiting for Twilio, which may still have taken the message.
		return Accepted{}, fmt.Errorf("%w: %s", ErrOutcomeUnknown, resp.Status)
	case code == http.StatusTooManyRequests || code == http.StatusRequestTimeout || code >= 500:
		return Accepted{}, &transientError{
			reason:     resp.Status + describeTwilioError(raw),
			retryAfter: retryAfter(resp.Header.Get("Retry-After")),
		}
	case code == http.StatusUnauthorized || code == http.StatusForbidden || code == http.StatusNotFound ||
		code >= 300 && code < 400:
		return Accepted{}, fmt.Errorf("%w: %s%s", ErrMisconfigured, resp.Status, describeTwilioError(raw))
	default:
		return Accepted{}, twilioRejection(resp.Status, raw)
	}
}

// twilioError is the body of Twilio's error responses.
type twilioError struct {
	Code     int    `json:"code"`
	Message  string `json:"message"`
	MoreInfo string `json:"more_info"`
	Status   int    `json:"status"`
}

func twilioRejection(status string, raw []byte) *RejectedError {
	var e twilioError
	if json.Unmarshal(raw, &e) != nil || e.Code == 0 {
		return &RejectedError{Message: status}
	}
	code := strconv.Itoa(e.Code)
	return &RejectedError{Code: code, Message: e.Message, OptOut: code == twilioCodeUnsubscribed}
}

// describeTwilioError renders Twilio's error body for an error message, or nothing when it has none.
func describeTwilioError(raw []byte) string {
	var e twilioError
	if json.Unmarshal(raw, &e) != nil || e.Code == 0 {
		return ""
	}
	return fmt.Sprintf(": %s (code %d)", e.Message, e.Code)
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
func (t *Twilio) backoff(n int) time.Duration {
	d := t.cfg.Backoff << min(n-1, 16)
	return d/2 + rand.N(d/2+1)
}

// twilioMaxValidity is Twilio's longest (and default) ValidityPeriod, in seconds.
const twilioMaxValidity = 36000

// twilioValidity is d as Twilio's ValidityPeriod (whole seconds, 1 to 36000, rounded down so
// the message never outlives d); ok is false when d is unset or no shorter than the default.
func twilioValidity(d time.Duration) (int, bool) {
	if d <= 0 {
		return 0, false
	}
	s := int(d / time.Second)
	if s >= twilioMaxValidity {
		return 0, false
	}
	return max(s, 1), true
}
