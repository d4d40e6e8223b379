package lookup

import (
	"context"
	"errors"
	"fmt"

	"github.com/chorus-sms/chorus/pkg/twilio"
)

// twilioLookup is Twilio Lookup v2 (pkg/twilio) as a Provider: a number whose line type
// Twilio could not tell is undetermined.
type twilioLookup struct{ *twilio.Lookup }

// Textable implements Provider.
func (t twilioLookup) Textable(ctx context.Context, e164 string) (bool, error) {
	ok, err := t.Lookup.Textable(ctx, e164)
	if errors.Is(err, twilio.ErrNoLineType) {
		return false, fmt.Errorf("%w: %w", ErrUndetermined, err)
	}
	return ok, err
}
