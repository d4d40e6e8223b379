package twilio

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

const (
	defaultBaseURL     = "https://api.twilio.com"
	defaultMaxAttempts = 4
	defaultBackoff     = 200 * time.Millisecond
	defaultHTTPTimeout = 15 * time.Second

	maxResponseBytes = 1 << 20
)

// CodeUnsubscribed is Twilio's error code for a recipient who unsubscribed from the sender.
const CodeUnsubscribed = "21610"

// Config configures the Messages API client.
type Config struct {
	AccountSID, AuthToken string
	BaseURL               string // default "https://api.twilio.com"
	// HTTPClient defaults to a client with a 15s timeout. Its transport must report
	// net/http/httptrace events (http.Transport does): without them every transport error is
	// treated as ErrOutcomeUnknown.
	HTTPClient  *http.Client
	MaxAttempts int           // attempts per Send, default 4
	Backoff     time.Duration // first wait between attempts, default 200ms; doubled each time, with jitter
}

// Client calls Twilio's Programmable Messaging REST API.
type Client struct {
	cfg      Config
	base     string // BaseURL without a trailing slash: list pages name their successors by path
	endpoint string
}

// New validates cfg and fills in its defaults.
func New(cfg Config) (*Client, error) {
	if cfg.AccountSID == "" || cfg.AuthToken == "" {
		return nil, errors.New("twilio: account SID and auth token are required")
	}
	if cfg.BaseURL == "" {
		cfg.BaseURL = defaultBaseURL
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
	return &Client{
		cfg:      cfg,
		base:     base,
		endpoint: base + "/2010-04-01/Accounts/" + url.PathEscape(cfg.AccountSID) + "/Messages.json",
	}, nil
}

// idleConnsPerHost is how many idle connections to Twilio are kept for reuse.
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

// apiError is the body of Twilio's error responses.
type apiError struct {
	Code     int    `json:"code"`
	Message  string `json:"message"`
	MoreInfo string `json:"more_info"`
	Status   int    `json:"status"`
}

// describeError renders Twilio's error body for an error message, or nothing when it has none.
func describeError(raw []byte) string {
	var e apiError
	if json.Unmarshal(raw, &e) != nil || e.Code == 0 {
		return ""
	}
	return fmt.Sprintf(": %s (code %d)", e.Message, e.Code)
}
