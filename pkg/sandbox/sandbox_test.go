package sandbox_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-sms/chorus/pkg/sandbox"
	"github.com/chorus-sms/chorus/pkg/twilio"
)

func TestPostSendsASignedCarrierForm(t *testing.T) {
	type received struct {
		url  string
		form url.Values
		sig  string
		ct   string
	}
	got := make(chan received, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		require.NoError(t, r.ParseForm())
		got <- received{url: "http://" + r.Host + r.URL.RequestURI(), form: r.PostForm, sig: r.Header.Get("X-Twilio-Signature"), ct: r.Header.Get("Content-Type")}
	}))
	defer srv.Close()

	form, err := sandbox.Text{To: "+12025550143", From: "+13125550100", Body: "Hi & bye", Media: []string{"https://m.test/a.jpg", "https://m.test/b.png"}}.Form()
	require.NoError(t, err)
	res, err := sandbox.Post(context.Background(), srv.Client(), srv.URL+"/", "tok", form)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, res.Body)
	require.NoError(t, res.Body.Close())

	r := <-got
	assert.Equal(t, srv.URL+"/webhooks/sandbox/inbound", r.url, "a trailing slash on the base URL is not doubled")
	assert.Equal(t, "application/x-www-form-urlencoded", r.ct)
	assert.True(t, twilio.ValidSignature("tok", r.url, r.form, r.sig), "signed over the URL and the form as received")
	assert.False(t, twilio.ValidSignature("other", r.url, r.form, r.sig))
	assert.Regexp(t, regexp.MustCompile(`^SM[0-9a-f]{32}$`), r.form.Get("MessageSid"))
	assert.Equal(t, "ACsandbox", r.form.Get("AccountSid"))
	assert.Equal(t, "Hi & bye", r.form.Get("Body"))
	assert.Equal(t, "+13125550100", r.form.Get("From"))
	assert.Equal(t, "+12025550143", r.form.Get("To"))
	assert.Equal(t, "2", r.form.Get("NumMedia"))
	assert.Equal(t, "https://m.test/a.jpg", r.form.Get("MediaUrl0"))
	assert.Equal(t, "https://m.test/b.png", r.form.Get("MediaUrl1"))

	again, err := sandbox.Text{To: "+12025550143", From: "+13125550100"}.Form()
	require.NoError(t, err)
	assert.NotEqual(t, form.Get("MessageSid"), again.Get("MessageSid"), "each text is a new message")
	assert.Equal(t, "0", again.Get("NumMedia"))
}
