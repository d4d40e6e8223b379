package links

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNewCode(t *testing.T) {
	seen := map[string]bool{}
	counts := map[rune]int{}
	for range 2000 {
		code, err := NewCode()
		require.NoError(t, err)
		require.True(t, ValidCode(code), code)
		assert.False(t, seen[code], "duplicate code %s", code)
		seen[code] = true
		for _, r := range code {
			counts[r]++
		}
	}
	// 16,000 characters over 62 symbols: each expected ~258 times. Every symbol must occur,
	// and none may be wildly over-represented (a modulo bias would show up here).
	assert.Len(t, counts, len(alphabet))
	for r, n := range counts {
		assert.Less(t, n, 400, "symbol %q", r)
	}
}

func TestValidCode(t *testing.T) {
	for _, s := range []string{"aB3dE5gH", "00000000", "zzzzzzzz"} {
		assert.True(t, ValidCode(s), s)
	}
	for _, s := range []string{
		"", "aB3dE5g", "aB3dE5gH9", "aB3dE5g-", "aB3dE5g_", "aB3dE5g ", "aB3dE5gé", "../../et",
	} {
		assert.False(t, ValidCode(s), s)
	}
}
