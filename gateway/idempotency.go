package gateway

import (
	"bytes"
	"context"
	"crypto/sha256"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"

	"github.com/chorus-sms/chorus/pkg/apierr"
	"github.com/chorus-sms/chorus/pkg/tenant"
)

// Idempotency-Key on every POST under /api (issue 28; the decisions are in docs/api-notes.md):
// a retry of a request whose answer was lost gets the first answer back instead of running
// again. The key's scope is (organization, user, key); a request is known by its fingerprint,
// the SHA-256 of its method, path and query and the SHA-256 of its body.
const (
	idempotencyHeader = "Idempotency-Key"
	replayedHeader    = "Idempotent-Replayed"
	maxIdempotencyKey = 255
	// idempotencyTTL is how long an answer is replayed, from the key's first request.
	idempotencyTTL = 24 * time.Hour
)

// durableRoutes are the POST routes that send or spend, by the route pattern recordRoute
// labels them with: their keys are kept in PostgreSQL, so a Redis restart cannot let a retry
// send twice. The other POSTs keep theirs in Redis only. TestDurableRoutesArePosts holds each
// to a documented POST route.
var durableRoutes = map[string]bool{
	"/api/campaigns":                          true, // create, and promote a draft (draftId)
	"/api/campaigns/{id}/test-send":           true,
	"/api/conversations/{phone_number}/reply": true,
	"/api/polls/{id}/start":                   true,
}

var (
	keyReused = apiError{Status: http.StatusUnprocessableEntity, Code: apierr.ReasonIdempotencyKeyReused,
		Message: "the Idempotency-Key was already used with another request"}
	keyInUse = apiError{Status: http.StatusConflict, Code: apierr.ReasonIdempotencyKeyInUse,
		Message: "a request with this Idempotency-Key is still running; retry later"}
	keyInvalid = apiError{Status: http.StatusBadRequest, Code: apierr.ReasonValidation, Message: "invalid Idempotency-Key header",
		Fields: map[string]string{idempotencyHeader: "1 to 255 printable ASCII characters, sent once"}}
	keyStoreDown = apiError{Status: http.StatusServiceUnavailable, Code: apierr.ReasonUnavailable,
		Message: "service unavailable, retry later"}
)

// idempotency is the mux's innermost middleware: it runs once the route and the principal are
// known, before the request body is decoded.
type idempotency struct {
	store *idempotencyStore
	log   *slog.Logger
}

func (m *idempotency) middleware(next runtime.HandlerFunc) runtime.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request, params map[string]string) {
		values, sent := r.Header[idempotencyHeader]
		p, ok := tenant.FromContext(r.Context())
		// The import upload is streamed, never held whole to be fingerprinted; importing a file
		// again changes nothing, so its retry needs no key.
		if r.Method != http.MethodPost || !sent || !ok || isImportUpload(r) {
			next(w, r, params)
			return
		}
		if len(values) != 1 || !validKey(values[0]) {
			writeError(w, r, keyInvalid)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			if infoFrom(r.Context()).bodyTooLarge {
				writeError(w, r, payloadTooLarge)
			} else {
				writeError(w, r, apiError{Status: http.StatusBadRequest, Code: apierr.ReasonValidation, Message: "the request body could not be read"})
			}
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		scope := idempotencyScope{org: p.OrgID, user: p.User, key: values[0], durable: durableRoutes[infoFrom(r.Context()).route]}
		fp := fingerprint(r, body)
		claim, rec, err := m.store.claim(r.Context(), scope, fp)
		switch {
		case err != nil:
			m.log.WarnContext(r.Context(), "idempotency key store failed", "request_id", infoFrom(r.Context()).id, "err", err)
			writeError(w, r, keyStoreDown)
			return
		case rec != nil && !bytes.Equal(rec.Fingerprint, fp):
			writeError(w, r, keyReused)
			return
		case rec != nil && rec.completed():
			replay(w, rec)
			return
		case rec != nil:
			writeError(w, r, keyInUse)
			return
		}
		c := &capture{ResponseWriter: w}
		func() {
			// A panic must not keep the key: it is released, and the panic goes on to
			// recoverPanics' 500.
			defer func() {
				if p := recover(); p != nil {
					m.finish(r, claim, nil)
					panic(p)
				}
			}()
			next(c, r, params)
		}()
		if !storable(c.status()) {
			m.finish(r, claim, nil)
			return
		}
		m.finish(r, claim, &idempotencyRecord{
			Fingerprint: fp, Status: c.status(), ContentType: c.Header().Get("Content-Type"), Body: c.body.Bytes(),
		})
	}
}

// detachKeyed lets a POST with an Idempotency-Key run to its end (its deadline) whether or not
// the caller stays: a caller that hung up retries with the key, and must then find the
// answer, not a request cut off halfway.
func detachKeyed(r *http.Request) *http.Request {
	if _, sent := r.Header[idempotencyHeader]; !sent || r.Method != http.MethodPost {
		return r
	}
	return r.WithContext(context.WithoutCancel(r.Context()))
}

// finish stores rec as the key's answer, or releases the key when rec is nil. A failure is
// logged: the caller has its answer, and a retry runs again (or finds the key in use until the
// claim's bound passes).
func (m *idempotency) finish(r *http.Request, c claim, rec *idempotencyRecord) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), finishTimeout)
	defer cancel()
	var err error
	if rec == nil {
		err = m.store.release(ctx, c)
	} else {
		err = m.store.complete(ctx, c, rec)
	}
	if err != nil {
		m.log.WarnContext(r.Context(), "idempotency key not finished", "request_id", infoFrom(r.Context()).id, "stored", rec != nil, "err", err)
	}
}

// finishTimeout bounds storing or releasing a key after the request ran.
const finishTimeout = 5 * time.Second

// storable says whether an answer is kept for replay: not a 5xx (the service may not have
// done the work: a retry runs again), nor a 429 (a limit the retry may find lifted), nor a
// canceled call's 499.
func storable(status int) bool {
	return status >= 200 && status < 500 && status != http.StatusTooManyRequests && status != 499
}

// validKey accepts 1 to 255 printable ASCII characters (space to tilde).
func validKey(k string) bool {
	if k == "" || len(k) > maxIdempotencyKey {
		return false
	}
	for i := range len(k) {
		if k[i] < 0x20 || k[i] > 0x7e {
			return false
		}
	}
	return true
}

// fingerprint is the SHA-256 of the method, the path and query as sent, and the SHA-256 of
// the body.
func fingerprint(r *http.Request, body []byte) []byte {
	bodySum := sha256.Sum256(body)
	h := sha256.New()
	_, _ = io.WriteString(h, r.Method+" "+r.URL.RequestURI()+"\n")
	_, _ = h.Write(bodySum[:])
	return h.Sum(nil)
}

// replay answers the stored response byte for byte.
func replay(w http.ResponseWriter, rec *idempotencyRecord) {
	h := w.Header()
	if rec.ContentType != "" {
		h.Set("Content-Type", rec.ContentType)
	}
	h.Set("Content-Length", strconv.Itoa(len(rec.Body)))
	h.Set(replayedHeader, "true")
	w.WriteHeader(rec.Status)
	_, _ = w.Write(rec.Body)
}

// capture passes an answer through and keeps a copy of its status and body.
type capture struct {
	http.ResponseWriter
	code int
	body bytes.Buffer
}

func (c *capture) WriteHeader(code int) {
	if c.code == 0 && code >= 200 {
		c.code = code
	}
	c.ResponseWriter.WriteHeader(code)
}

func (c *capture) Write(b []byte) (int, error) {
	if c.code == 0 {
		c.code = http.StatusOK
	}
	c.body.Write(b)
	return c.ResponseWriter.Write(b)
}

// status is the answer's status; 0 when nothing was written.
func (c *capture) status() int { return c.code }

// Unwrap lets http.ResponseController reach the connection's writer.
func (c *capture) Unwrap() http.ResponseWriter { return c.ResponseWriter }
