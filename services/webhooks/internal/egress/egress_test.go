package egress_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-sms/chorus/services/webhooks/internal/egress"
)

func TestCheck(t *testing.T) {
	refused := []string{"127.0.0.1", "::1", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254", "fe80::1",
		"fd00:ec2::254", "100.100.100.200", "0.0.0.0", "::", "::ffff:127.0.0.1", "::ffff:10.0.0.1", "224.0.0.1", "64:ff9b::a00:1"}
	for _, a := range refused {
		assert.ErrorIs(t, egress.Policy{}.Check(netip.MustParseAddr(a)), egress.ErrForbiddenAddress, a)
	}
	for _, a := range []string{"93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946", "8.8.8.8"} {
		assert.NoError(t, egress.Policy{}.Check(netip.MustParseAddr(a)), a)
	}
	dev := egress.Policy{AllowLoopback: true}
	assert.NoError(t, dev.Check(netip.MustParseAddr("127.0.0.1")))
	assert.NoError(t, dev.Check(netip.MustParseAddr("::1")))
	assert.Error(t, dev.Check(netip.MustParseAddr("10.0.0.1")), "only loopback is opened")
}

func TestCheckURL(t *testing.T) {
	ctx := context.Background()
	for raw, ok := range map[string]bool{
		"https://93.184.216.34/hook":     true,
		"http://127.0.0.1:9/hook":        false,
		"https://localhost/hook":         false,
		"http://169.254.169.254/latest/": false,
		"ftp://93.184.216.34/":           false,
		"/relative":                      false,
		"https://user:pw@93.184.216.34/": false,
		"https://[::1]/":                 false,
	} {
		_, got := egress.Policy{}.CheckURL(ctx, raw)
		assert.Equal(t, ok, got, raw)
	}
	_, ok := egress.Policy{AllowLoopback: true}.CheckURL(ctx, "http://127.0.0.1:9/hook")
	assert.True(t, ok)
}

// The check is made again when connecting: a loopback receiver is refused by the production
// client whatever the URL said when it was registered, and reached by the development one.
// Redirects are answered as they are.
func TestClientRefusesAtConnectTime(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://example.com/", http.StatusFound)
	}))
	defer srv.Close()
	_, err := egress.Policy{}.Client(time.Second, 2).Get(srv.URL)
	require.Error(t, err)
	assert.True(t, errors.Is(err, egress.ErrForbiddenAddress), "%v", err)

	resp, err := egress.Policy{AllowLoopback: true}.Client(time.Second, 2).Get(srv.URL)
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusFound, resp.StatusCode, "the redirect is not followed")
}
