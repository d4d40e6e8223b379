package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chorus-sms/chorus/pkg/twilio"
)

// carrierMessage is one message the carrier accepted, and when its request arrived: its
// media (MediaUrl) and SendAsMms ("true" asks Twilio for an MMS without media) as sent.
type carrierMessage struct {
	SID, From, To, Body string
	Media               []string
	SendAsMms           string
	At                  time.Time
}

// twilioCarrier speaks Twilio's Messages API: it accepts every message, records it, and
// reports it delivered to the message's StatusCallback, signed as Twilio signs, retrying
// until the callback is answered 200. It also answers the Messages list (To and From filters,
// newest first, paged), from which the reconciler learns whether a message whose hand-off was
// lost reached it.
type twilioCarrier struct {
	*httptest.Server
	token    string
	sends    atomic.Int64
	mu       sync.Mutex
	accepted []carrierMessage
	reports  chan url.Values // StatusCallback URL in "url", the form in the rest
	pending  sync.WaitGroup  // reports not yet answered
	// refused maps a From number to the error code the carrier refuses its messages with
	// (refuseFrom), as Twilio answers a number the carriers filter (30007).
	refused map[string]int
	// filtered maps a From number to the error code its accepted messages are reported
	// undelivered with (filterFrom), as Twilio reports carrier filtering after the fact.
	filtered map[string]int
}

// filterFrom has the carrier take messages from number but report each undelivered with
// Twilio error code, from now on.
func (c *twilioCarrier) filterFrom(number string, code int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.filtered == nil {
		c.filtered = map[string]int{}
	}
	c.filtered[number] = code
}

// refuseFrom has the carrier refuse every message from number with Twilio error code, from
// now on, recording none of them.
func (c *twilioCarrier) refuseFrom(number string, code int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.refused == nil {
		c.refused = map[string]int{}
	}
	c.refused[number] = code
}

// newTwilioCarrier starts the carrier with workers posting its delivery reports through
// client; it stops with the test.
func newTwilioCarrier(t *testing.T, token string, client *http.Client, workers int) *twilioCarrier {
	c := &twilioCarrier{token: token, reports: make(chan url.Values, 1<<16)}
	c.Server = httptest.NewServer(http.HandlerFunc(c.accept))
	ctx, cancel := context.WithCancel(context.Background())
	var done sync.WaitGroup
	for range workers {
		done.Go(func() {
			for {
				select {
				case <-ctx.Done():
					return
				case r := <-c.reports:
					c.report(ctx, t, client, r)
				}
			}
		})
	}
	t.Cleanup(func() { cancel(); done.Wait(); c.Close() })
	return c
}

func (c *twilioCarrier) accept(w http.ResponseWriter, r *http.Request) {
	at := time.Now()
	if r.Method == http.MethodGet {
		c.list(w, r)
		return
	}
	if err := r.ParseForm(); err != nil || !strings.HasSuffix(r.URL.Path, "/Messages.json") {
		http.Error(w, `{"code": 20001, "message": "bad request"}`, http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	code, refused := c.refused[r.PostForm.Get("From")]
	filteredCode, filtered := c.filtered[r.PostForm.Get("From")]
	c.mu.Unlock()
	if refused {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"code": %d, "message": "Message from %s refused", "status": 400}`, code, r.PostForm.Get("From"))
		return
	}
	n := c.sends.Add(1)
	sid := fmt.Sprintf("SM%032d", n)
	c.mu.Lock()
	c.accepted = append(c.accepted, carrierMessage{SID: sid, From: r.PostForm.Get("From"), To: r.PostForm.Get("To"), Body: r.PostForm.Get("Body"),
		Media: r.PostForm["MediaUrl"], SendAsMms: r.PostForm.Get("SendAsMms"), At: at})
	c.mu.Unlock()
	if cb := r.PostForm.Get("StatusCallback"); cb != "" {
		c.pending.Add(1)
		report := url.Values{"url": {cb}, "MessageSid": {sid}, "MessageStatus": {"delivered"}, "AccountSid": {"ACe2e"},
			"To": {r.PostForm.Get("To")}, "From": {r.PostForm.Get("From")}}
		if filtered {
			report.Set("MessageStatus", "undelivered")
			report.Set("ErrorCode", strconv.Itoa(filteredCode))
		}
		c.reports <- report
	}
	twilio.Accept(w, sid)
}

// report posts one delivery report until it is answered 200 (its receiver may be down).
func (c *twilioCarrier) report(ctx context.Context, t *testing.T, client *http.Client, r url.Values) {
	defer c.pending.Done()
	cb := r.Get("url")
	form := url.Values{}
	for k, v := range r {
		if k != "url" {
			form[k] = v
		}
	}
	for ctx.Err() == nil {
		status, err := postSigned(ctx, client, c.token, cb, form)
		if err == nil && status == http.StatusOK {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// postSigned posts form to fullURL signed with token as Twilio signs its webhooks, and returns
// the answer's status.
func postSigned(ctx context.Context, client *http.Client, token, fullURL string, form url.Values) (int, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", fullURL, strings.NewReader(form.Encode()))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Twilio-Signature", twilio.Sign(token, fullURL, form))
	res, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	_, _ = io.Copy(io.Discard, res.Body)
	return res.StatusCode, nil
}

// list answers Twilio's Messages list from the accepted messages, each reported delivered as
// the carrier's callbacks do.
func (c *twilioCarrier) list(w http.ResponseWriter, r *http.Request) {
	var all []twilio.Message
	for _, m := range c.messages() {
		all = append(all, twilio.Message{SID: m.SID, From: m.From, To: m.To, Body: m.Body, Status: "delivered",
			Direction: "outbound-api", DateCreated: m.At.UTC().Format(twilio.DateLayout)})
	}
	twilio.ServeList(w, r, all)
}

// messages is a copy of every message accepted so far, in arrival order.
func (c *twilioCarrier) messages() []carrierMessage {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]carrierMessage(nil), c.accepted...)
}
