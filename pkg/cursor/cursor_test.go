package cursor

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type page struct {
	At time.Time `json:"t"`
	ID string    `json:"id"`
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	c := New("secret")
	in := page{At: time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.UTC), ID: "0190d1f8-0000-7000-8000-000000000001"}
	s, err := c.Encode(in)
	require.NoError(t, err)
	var out page
	require.NoError(t, c.Decode(s, &out))
	assert.Equal(t, in, out)
}

func TestRejectsTamperedAndForeign(t *testing.T) {
	t.Parallel()
	c := New("secret")
	s, err := c.Encode(page{ID: "a"})
	require.NoError(t, err)
	var out page
	// Flip each character in turn: no edit may verify.
	for i := range s {
		b := []byte(s)
		if b[i] == 'A' {
			b[i] = 'B'
		} else {
			b[i] = 'A'
		}
		assert.ErrorIs(t, c.Decode(string(b), &out), ErrInvalid, "edit at %d", i)
	}
	assert.ErrorIs(t, New("other").Decode(s, &out), ErrInvalid, "another key")
	for _, bad := range []string{"", "!!!", "abc", strings.Repeat("A", 2000)} {
		assert.ErrorIs(t, c.Decode(bad, &out), ErrInvalid, bad)
	}
}

func FuzzDecode(f *testing.F) {
	c := New("secret")
	good, _ := c.Encode(page{ID: "x"})
	f.Add(good)
	f.Add("")
	f.Add("eyJ0IjoiMjAyNi0wMS0wMlQwMzowNDowNVoiLCJpZCI6IngifQ")
	f.Fuzz(func(t *testing.T, s string) {
		var out page
		err := c.Decode(s, &out)
		if err == nil && s != good {
			// Anything that verifies must re-encode to itself: no second spelling of a cursor.
			again, eerr := c.Encode(out)
			if eerr != nil {
				t.Fatalf("decoded %q but cannot re-encode: %v", s, eerr)
			}
			var back page
			if c.Decode(again, &back) != nil || back != out {
				t.Fatalf("decoded %q to %+v, which does not round-trip", s, out)
			}
		}
	})
}
