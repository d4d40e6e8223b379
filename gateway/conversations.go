package gateway

import (
	"bufio"
	"math"
	"net/http"
	"strconv"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"

	"github.com/chorus-sms/chorus/gateway/internal/restjson"
	"github.com/chorus-sms/chorus/pkg/apierr"
	"github.com/chorus-sms/chorus/pkg/tenant"
	messagingv1 "github.com/chorus-sms/chorus/proto/gen/go/messaging/v1"
)

// conversationsPath lists every thread the filters keep (the spec: "Without filters all
// non-archived threads are returned"), however many. The list leaves messaging a page at a
// time and the gateway writes each page out as it arrives, as one JSON array: neither process
// holds more than a page, so memory stays flat at any size and the database connection is held
// for one page's query, not for as long as a slow client reads. It is a route of its own on the
// mux (behind the same authentication, tenancy and rate limit as every /api route) because an
// HTTP rule answers one message.
const conversationsPath = "/api/conversations"

// conversationsPage is how many threads the gateway asks messaging for at a time (its maximum).
const conversationsPage = 500

// conversationsHandler answers GET /api/conversations. A failure before the first byte answers
// the shared error body; one on a later page cannot change the status already sent, so the
// connection is aborted and the client sees a truncated body, never a short array that
// passes for the whole list.
func conversationsHandler(mux *runtime.ServeMux, client messagingv1.MessagingServiceClient) runtime.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request, _ map[string]string) {
		ctx := r.Context()
		if p, ok := tenant.FromContext(ctx); ok {
			ctx = tenant.AppendToOutgoing(ctx, p)
		}
		req, limit, err := conversationsRequest(r)
		if err != nil {
			runtime.HTTPError(ctx, mux, &runtime.JSONPb{}, w, r, err)
			return
		}
		req.Limit = int32(min(limit, conversationsPage))
		res, err := client.ListConversations(ctx, req)
		if err != nil {
			runtime.HTTPError(ctx, mux, &runtime.JSONPb{}, w, r, err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		out := bufio.NewWriterSize(w, 32<<10)
		var b []byte
		sep := byte('[')
		for {
			for _, c := range res.GetConversations() {
				b = append(b[:0], sep)
				b, err = appendJSON(b, c)
				if err != nil {
					panic(http.ErrAbortHandler)
				}
				if _, err := out.Write(b); err != nil {
					return // the client left
				}
				sep = ','
			}
			limit -= len(res.GetConversations())
			if res.GetCursor() == "" || limit <= 0 {
				break
			}
			req.Cursor, req.Limit = res.GetCursor(), int32(min(limit, conversationsPage))
			if res, err = client.ListConversations(ctx, req); err != nil {
				panic(http.ErrAbortHandler)
			}
		}
		if sep == '[' {
			_, _ = out.WriteString("[")
		}
		_, _ = out.WriteString("]")
		_ = out.Flush()
	}
}

// conversationsRequest reads the list's query parameters, and the most threads to answer
// (limit, optional: every thread by default); a malformed one is a 400 naming it.
func conversationsRequest(r *http.Request) (*messagingv1.ListConversationsRequest, int, error) {
	q := r.URL.Query()
	req := &messagingv1.ListConversationsRequest{Search: q.Get("search")}
	flags := []struct {
		name string
		to   *bool
	}{{"unread", &req.Unread}, {"unresponded", &req.Unresponded}, {"includeArchived", &req.IncludeArchived}}
	bad := apierr.Fields{}
	for _, f := range flags {
		v := q.Get(f.name)
		if v == "" {
			continue
		}
		b, err := strconv.ParseBool(v)
		if err != nil {
			bad.Add(f.name, "must be true or false")
			continue
		}
		*f.to = b
	}
	limit := math.MaxInt
	if v := q.Get("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			bad.Add("limit", "must be a positive integer")
		}
		limit = n
	}
	if len(bad) > 0 {
		return nil, 0, apierr.Validation(bad)
	}
	return req, limit, nil
}

// appendJSON appends c as every route prints a conversation.
func appendJSON(b []byte, c *messagingv1.Conversation) ([]byte, error) {
	if out, ok := restjson.Append(b, c); ok {
		return out, nil
	}
	return restjson.Options.MarshalAppend(b, c)
}
