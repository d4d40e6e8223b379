package inbound_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-sms/chorus/services/messaging/internal/carrier"
	"github.com/chorus-sms/chorus/services/messaging/internal/store"
)

// receive processes body from sender and returns whether sender is opted in after it, and the
// message as stored.
func (e *env) receive(t *testing.T, body string) (bool, store.Message) {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, e.proc.Receive(ctx, carrier.SandboxName, e.text(body)))
	optedIn, _ := e.peers.Consent(t, e.org, sender)
	thread, err := e.st.Thread(ctx, e.org, sender, nil, 10)
	require.NoError(t, err)
	for _, m := range thread {
		if m.Direction == store.Incoming {
			return optedIn, m
		}
	}
	t.Fatal("no incoming message")
	return optedIn, store.Message{}
}

// An opt-out in words is a STOP: the contact is opted out and gets one confirmation, which a
// later STOP or another opt-out in words does not repeat.
func TestRevocationInWordsOptsOutOnce(t *testing.T) {
	e := newEnv(t)
	optedIn, in := e.receive(t, "Please stop texting me, thanks")
	assert.False(t, optedIn)
	assert.Equal(t, 1, e.confirmations(t))
	assert.True(t, in.OptOutDetected)
	assert.False(t, in.RequiresResponse)
	assert.Equal(t, "opt_out", in.Category)
	assert.Empty(t, in.Keyword, "no keyword was sent")

	for _, again := range []string{"STOP", "bórrenme de la lista"} {
		optedIn, _ = e.receive(t, again)
		assert.False(t, optedIn)
	}
	assert.Equal(t, 1, e.confirmations(t), "an opt-out after an opt-out is not confirmed again")
}

// A message that may revoke consent is left to a person: the contact stays opted in, nothing is
// answered, and the message is marked for a reply.
func TestDoubtfulRevocationIsLeftToAPerson(t *testing.T) {
	e := newEnv(t)
	optedIn, in := e.receive(t, "stop texting me after 9pm")
	assert.True(t, optedIn)
	assert.Equal(t, 0, e.confirmations(t))
	assert.True(t, in.OptOutDetected)
	assert.True(t, in.RequiresResponse)
	assert.NotEqual(t, "opt_out", in.Category)
}
