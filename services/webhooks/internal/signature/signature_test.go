package signature_test

import (
	"encoding/base64"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-sms/chorus/services/webhooks/internal/signature"
)

// The Standard Webhooks specification's own example: this secret, id, timestamp and body sign
// to this signature (github.com/standard-webhooks/standard-webhooks, spec/standard-webhooks.md).
func TestSignMatchesTheSpecificationsExample(t *testing.T) {
	key, err := base64.StdEncoding.DecodeString("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	require.NoError(t, err)
	ts := time.Unix(1614265330, 0)
	got := signature.Sign(key, "msg_p5jXN8AQM9LWM0D4loKWxJek", ts, []byte(`{"test": 2432232314}`))
	assert.Equal(t, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=", got)
}

func TestSecretAndHeaders(t *testing.T) {
	key := signature.NewKey()
	secret := signature.Secret(key)
	require.True(t, strings.HasPrefix(secret, "whsec_"))
	decoded, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	require.NoError(t, err)
	assert.Equal(t, key, decoded)
	assert.NotEqual(t, key, signature.NewKey())

	h := http.Header{}
	ts := time.Unix(1700000000, 0)
	signature.SetHeaders(h, key, "id-1", ts, []byte("{}"))
	assert.Equal(t, "id-1", h.Get("webhook-id"))
	assert.Equal(t, "1700000000", h.Get("webhook-timestamp"))
	assert.Equal(t, signature.Sign(key, "id-1", ts, []byte("{}")), h.Get("webhook-signature"))
}
