package phone

import (
	"fmt"
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

// The E.164 shortcut answers as the full parse does, valid or not: every area code, with
// exchanges and lines at the edges of the plan's rules.
func TestNormalizeE164ShortcutAgreesWithParse(t *testing.T) {
	t.Parallel()
	for area := 200; area <= 999; area++ {
		for _, rest := range []string{"5550143", "2000000", "0000000", "1234567", "9999999", "9110000"} {
			s := fmt.Sprintf("+1%d%s", area, rest)
			_, ok := nanpE164(s)
			require.True(t, ok, s)
			fast, fastErr := Normalize(s)
			slow, slowErr := parse(s)
			require.Equal(t, slow, fast, s)
			require.Equal(t, slowErr, fastErr, s)
		}
	}
	for _, s := range []string{"+11025550143", "+1202555014", "+120255501430", "+1202555O143", "+2202555014"} {
		_, ok := nanpE164(s)
		assert.False(t, ok, "%s takes the full parse", s)
	}
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
		if slow, err := parse(got); err != nil || slow != got {
			t.Fatalf("Normalize(%q) = %q, which the full parse reads as %q, %v", s, got, slow, err)
		}
	})
}

func TestIsE164(t *testing.T) {
	t.Parallel()
	for _, ok := range []string{"+12025550100", "+447911123456", "+4930123456", "+861234567890123", "+6834002"} {
		assert.True(t, IsE164(ok), ok)
	}
	for _, bad := range []string{"", "+", "12025550100", "+1 202 555 0100", "+1202555010a", "+02025550100", "+683400", "+1234567890123456", "(202) 555-0100"} {
		assert.False(t, IsE164(bad), bad)
	}
}
