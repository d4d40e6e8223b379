package inbound_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-sms/chorus/services/messaging/internal/carrier"
	"github.com/chorus-sms/chorus/services/messaging/internal/store"
)

// latestIncoming is the newest message sender sent.
func (e *env) latestIncoming(t *testing.T) store.Message {
	t.Helper()
	thread, err := e.st.Thread(context.Background(), e.org, sender, nil, 10)
	require.NoError(t, err)
	for _, m := range thread {
		if m.Direction == store.Incoming {
			return m
		}
	}
	t.Fatal("no incoming message")
	return store.Message{}
}

// An opt-out in words is a STOP: the contact is opted out and gets one confirmation, which a
// later STOP or another opt-out in words does not repeat.
func TestRevocationInWordsOptsOutOnce(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	require.NoError(t, e.proc.Receive(ctx, carrier.SandboxName, e.text("Please stop texting me, thanks")))
	optedIn, _ := e.peers.Consent(t, e.org, sender)
	assert.False(t, optedIn)
	assert.Equal(t, 1, e.confirmations(t))
	in := e.latestIncoming(t)
	assert.True(t, in.OptOutDetected)
	assert.False(t, in.RequiresResponse)
	assert.Equal(t, "opt_out", in.Category)
	assert.Empty(t, in.Keyword, "no keyword was sent")

	require.NoError(t, e.proc.Receive(ctx, carrier.SandboxName, e.text("STOP")))
	require.NoError(t, e.proc.Receive(ctx, carrier.SandboxName, e.text("bórrenme de la lista")))
	assert.Equal(t, 1, e.confirmations(t), "an opt-out after an opt-out is not confirmed again")
}

// A message that may revoke consent is left to a person: the contact stays opted in, nothing is
// answered, and the message is marked for a reply.
func TestDoubtfulRevocationIsLeftToAPerson(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	require.NoError(t, e.proc.Receive(ctx, carrier.SandboxName, e.text("stop texting me after 9pm")))
	optedIn, _ := e.peers.Consent(t, e.org, sender)
	assert.True(t, optedIn)
	assert.Equal(t, 0, e.confirmations(t))
	in := e.latestIncoming(t)
	assert.True(t, in.OptOutDetected)
	assert.True(t, in.RequiresResponse)
	assert.NotEqual(t, "opt_out", in.Category)
}
