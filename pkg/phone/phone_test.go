package phone

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNormalizeUSFormats(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		"(202) 555-0143", "202-555-0143", "202.555.0143", "2025550143", "+1 202 555 0143",
		"1-202-555-0143", "+12025550143", " 202 555 0143 ",
	} {
		got, err := Normalize(in)
		require.NoError(t, err, in)
		assert.Equal(t, "+12025550143", got, in)
	}
}

func TestNormalizeRejects(t *testing.T) {
	t.Parallel()
	for _, in := range []string{"", "abc", "123", "555-0143", "+1 000 000 0000", strings.Repeat("9", 80),
		"202-555-0143 ext. 12", "(202) 555-0143 x99"} {
		_, err := Normalize(in)
		assert.ErrorIs(t, err, ErrInvalid, in)
	}
}

func TestNormalizeKeepsForeignNumbersWithCountryCode(t *testing.T) {
	t.Parallel()
	got, err := Normalize("+44 20 7946 0958")
	require.NoError(t, err)
	assert.Equal(t, "+442079460958", got)
}

func FuzzNormalize(f *testing.F) {
	for _, s := range []string{"(202) 555-0143", "+12025550143", "1-800-FLOWERS", "+", "٣٣٣", "+1 (202) 555-0143 ext. 12"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := Normalize(s)
		if err != nil {
			return
		}
		// Whatever parses must come out as E.164 and be a fixed point.
		if !strings.HasPrefix(got, "+") || len(got) > 16 || Digits(got) != got[1:] {
			t.Fatalf("Normalize(%q) = %q, not E.164", s, got)
		}
		again, err := Normalize(got)
		if err != nil || again != got {
			t.Fatalf("Normalize(%q) = %q, then %q, %v", s, got, again, err)
		}
	})
}
