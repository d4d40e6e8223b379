package messaging_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-sms/chorus/pkg/service"
	"github.com/chorus-sms/chorus/pkg/twilio"
	"github.com/chorus-sms/chorus/services/messaging"
)

// A process that speaks for real numbers refuses the secrets everyone can read in this repo,
// naming the variable to set.
func TestTwilioRefusesDefaultSecrets(t *testing.T) {
	base := messaging.Config{
		Storage: service.Storage{DatabaseURL: "postgres://unused", RedisURL: "redis://127.0.0.1:6379/0"}, PublicURL: "https://chorus.test",
		Provider: messaging.ProviderTwilio, Twilio: twilio.Config{AccountSID: "AC1", AuthToken: "t", BaseURL: "https://api.twilio.com"},
		CursorSecret: "own-cursor-secret", SandboxToken: "own-sandbox-token", SendingTimeout: time.Hour,
	}
	for name, edit := range map[string]func(*messaging.Config){
		"CHORUS_CURSOR_SECRET":      func(c *messaging.Config) { c.CursorSecret = messaging.DevCursorSecret },
		"CHORUS_SANDBOX_AUTH_TOKEN": func(c *messaging.Config) { c.SandboxToken = messaging.DevSandboxToken },
	} {
		t.Run(name, func(t *testing.T) {
			cfg := base
			edit(&cfg)
			_, err := messaging.New(context.Background(), cfg)
			require.Error(t, err)
			assert.Contains(t, err.Error(), name)
		})
	}
}
