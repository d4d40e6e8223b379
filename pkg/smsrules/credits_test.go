package smsrules_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"

	"github.com/chorus-sms/chorus/pkg/smsrules"
)

func TestSMSCreditsPerStarted480Characters(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		text string
		want int32
	}{
		{"empty is one segment", "", 1},
		{"one character", "a", 1},
		{"exactly one segment", strings.Repeat("a", 480), 1},
		{"one past a segment", strings.Repeat("a", 481), 2},
		{"exactly two segments", strings.Repeat("a", 960), 2},
		{"characters, not bytes", strings.Repeat("é", 480), 1},
		{"emoji count once each", strings.Repeat("🎉", 481), 2},
		{"ten segments", strings.Repeat("x", 4800), 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, smsrules.SMSCredits(tc.text))
			assert.Equal(t, tc.want, smsrules.Credits(tc.text, false))
		})
	}
}

func TestMMSCostsTwoWhateverTheText(t *testing.T) {
	t.Parallel()
	assert.Equal(t, int32(2), smsrules.Credits("", true))
	assert.Equal(t, int32(2), smsrules.Credits(strings.Repeat("a", 5000), true))
}

// For any text the price is the smallest number of 480-character segments that holds it, and
// splitting a text never makes it cheaper.
func FuzzSMSCredits(f *testing.F) {
	for _, seed := range []string{"", "hi", strings.Repeat("a", 480), strings.Repeat("ü", 481), "\xff\xfe", "日本語"} {
		f.Add(seed, 3)
	}
	f.Fuzz(func(t *testing.T, text string, cut int) {
		got := int(smsrules.SMSCredits(text))
		n := utf8.RuneCountInString(text)
		if got < 1 {
			t.Fatalf("%d credits for %q: a message costs at least 1", got, text)
		}
		if n > got*smsrules.SegmentLength {
			t.Fatalf("%d characters do not fit in %d segments", n, got)
		}
		if n > 0 && n <= (got-1)*smsrules.SegmentLength {
			t.Fatalf("%d characters fit in %d segments, charged %d", n, got-1, got)
		}
		if len(text) > 0 {
			cut = (cut%len(text) + len(text)) % len(text)
			a, b := smsrules.SMSCredits(text[:cut]), smsrules.SMSCredits(text[cut:])
			if int(a+b) < got {
				t.Fatalf("split at byte %d costs %d+%d, whole %d", cut, a, b, got)
			}
		}
	})
}
