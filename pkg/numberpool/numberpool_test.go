package numberpool

import (
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"

	"github.com/chorus-sms/chorus/pkg/apierr"
)

func TestParseIDs(t *testing.T) {
	a, b := uuid.NewString(), uuid.NewString()
	for _, c := range []struct {
		name string
		raw  []string
		want apierr.Fields
	}{
		{"two", []string{a, b}, apierr.Fields{}},
		{"empty", nil, apierr.Fields{"pool": "must hold 1 to 400 phone number ids"}},
		{"too many", strings.Split(strings.Repeat(a+",", Max+1), ",")[:Max+1], apierr.Fields{"pool": "must hold 1 to 400 phone number ids"}},
		{"repeat", []string{a, b, a}, apierr.Fields{"pool[2]": "repeats pool[0]"}},
		{"not a uuid", []string{a, "x"}, apierr.Fields{"pool[1]": "must be a phone number id (UUID)"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := apierr.Fields{}
			ParseIDs(f, "pool", c.raw)
			assert.Equal(t, c.want, f)
		})
	}
}
