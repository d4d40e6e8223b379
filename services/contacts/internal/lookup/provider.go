// Package lookup finds out whether a contact's phone can receive SMS: a Provider answers for
// one number, and a River job per contact and phone asks it in the background and records the
// answer.
package lookup

import (
	"context"
	"errors"
	"fmt"

	"github.com/chorus-sms/chorus/pkg/twilio"
)

// Provider tells whether a phone number can receive SMS. An error wrapping ErrUndetermined
// means asking again will not help; any other error is worth a retry.
type Provider interface {
	Textable(ctx context.Context, e164 string) (bool, error)
}

// ErrUndetermined means the provider answered but could not tell the line type.
var ErrUndetermined = errors.New("line type undetermined")

// Provider names of CHORUS_LOOKUP_PROVIDER.
const (
	ProviderSandbox = "sandbox"
	ProviderTwilio  = "twilio"
)

// NewProvider returns the named provider; twilio needs cfg's credentials.
func NewProvider(name string, cfg twilio.LookupConfig) (Provider, error) {
	switch name {
	case ProviderSandbox, "":
		return Sandbox{}, nil
	case ProviderTwilio:
		l, err := twilio.NewLookup(cfg)
		if err != nil {
			return nil, err
		}
		return twilioLookup{l}, nil
	}
	return nil, fmt.Errorf("lookup: unknown provider %q (want %s or %s)", name, ProviderSandbox, ProviderTwilio)
}
