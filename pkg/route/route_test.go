package route_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/chorus-sms/chorus/pkg/route"
)

func TestParse(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"": route.Auto, "auto": route.Auto, "AUTO": route.Auto, "sms": route.SMS, "Mms": route.MMS} {
		got, ok := route.Parse(in)
		assert.True(t, ok, in)
		assert.Equal(t, want, got, in)
	}
	for _, in := range []string{"EMAIL", " SMS", "RCS"} {
		_, ok := route.Parse(in)
		assert.False(t, ok, in)
	}
}

func TestRule(t *testing.T) {
	t.Parallel()
	short, long := "Hi Ann", strings.Repeat("a", route.AutoMMSLength+1)
	for _, tc := range []struct {
		name  string
		route string
		media bool
		text  string
		mms   bool
		price int32
	}{
		{"media means MMS under AUTO", route.Auto, true, short, true, 2},
		{"media overrides forced SMS", route.SMS, true, short, true, 2},
		{"forced MMS without media", route.MMS, false, short, true, 2},
		{"forced SMS stays SMS however long", route.SMS, false, long, false, 3},
		{"AUTO short text is SMS", route.Auto, false, short, false, 1},
		{"empty route is AUTO", "", false, short, false, 1},
		{"AUTO at two segments is still SMS", route.Auto, false, strings.Repeat("a", route.AutoMMSLength), false, 2},
		{"AUTO past two segments is MMS", route.Auto, false, long, true, 2},
		{"characters, not bytes", route.Auto, false, strings.Repeat("é", route.AutoMMSLength), false, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mms, price := route.Price(tc.route, tc.media, tc.text)
			assert.Equal(t, tc.mms, mms)
			assert.Equal(t, tc.mms, route.IsMMS(tc.route, tc.media, tc.text))
			assert.Equal(t, tc.price, price)
		})
	}
}

// Under AUTO no message costs more than an MMS.
func TestAutoNeverCostsMoreThanMMS(t *testing.T) {
	t.Parallel()
	for n := 0; n <= 1600; n += 7 {
		_, price := route.Price(route.Auto, false, strings.Repeat("x", n))
		assert.LessOrEqual(t, price, int32(2), n)
	}
}
