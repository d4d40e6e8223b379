package twilio

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
)

// ServeList, Accept and Refuse answer as Twilio's Messages API does, for the fake Twilio servers of
// the tests.

// DefaultPageSize is the page size of a list request that names none.
const DefaultPageSize = 50

// ServeList answers r, a list request, from all (oldest first) as Twilio does: the messages
// matching its To and From filters, newest first, PageSize of them from page Page, the next
// page named by the request's own path and query with Page one on.
func ServeList(w http.ResponseWriter, r *http.Request, all []Message) {
	q := r.URL.Query()
	size, page := DefaultPageSize, 0
	if n, err := strconv.Atoi(q.Get("PageSize")); err == nil && n > 0 {
		size = n
	}
	if n, err := strconv.Atoi(q.Get("Page")); err == nil && n > 0 {
		page = n
	}
	var match []Message
	for i := len(all) - 1; i >= 0; i-- {
		m := all[i]
		if (q.Get("To") == "" || m.To == q.Get("To")) && (q.Get("From") == "" || m.From == q.Get("From")) {
			match = append(match, m)
		}
	}
	out := Page{Messages: append([]Message{}, match[min(page*size, len(match)):min((page+1)*size, len(match))]...)}
	if (page+1)*size < len(match) {
		q.Set("Page", strconv.Itoa(page+1))
		out.NextPageURI = r.URL.Path + "?" + q.Encode()
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

// Accept answers a create request (POST .../Messages.json) as Twilio does when it takes the
// message: 201 with the message's sid and status "queued".
func Accept(w http.ResponseWriter, sid string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusCreated)
	_ = json.NewEncoder(w).Encode(struct {
		SID    string `json:"sid"`
		Status string `json:"status"`
	}{sid, "queued"})
}

// Refuse answers a request as Twilio does when it refuses it: status, with Twilio's error body
// carrying code and message.
func Refuse(w http.ResponseWriter, status, code int, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(apiError{
		Code: code, Message: message, MoreInfo: fmt.Sprintf("https://www.twilio.com/docs/errors/%d", code), Status: status,
	})
}
