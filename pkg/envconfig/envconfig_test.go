package envconfig

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestReaderNamesEveryBadVariable(t *testing.T) {
	t.Parallel()
	r := FromMap(map[string]string{
		"CHORUS_A": "x", "CHORUS_B": "nope", "CHORUS_C": "-1s", "CHORUS_D": "zzz", "CHORUS_E": "42",
	})
	assert.Equal(t, 7, r.Int("CHORUS_A", 7, 0))
	assert.True(t, r.Bool("CHORUS_B", true))
	assert.Equal(t, time.Second, r.Duration("CHORUS_C", time.Second))
	assert.Equal(t, "a", r.OneOf("CHORUS_D", "a", "a", "b"))
	assert.Equal(t, 42, r.Int("CHORUS_E", 0, 1))
	r.Required("CHORUS_MISSING")
	err := r.Err()
	require.Error(t, err)
	for _, name := range []string{"CHORUS_A", "CHORUS_B", "CHORUS_C", "CHORUS_D", "CHORUS_MISSING"} {
		assert.Contains(t, err.Error(), name)
	}
	assert.NotContains(t, err.Error(), "CHORUS_E")
}

func TestWithDefaultsFillsGapsAndReportsToParent(t *testing.T) {
	t.Parallel()
	r := FromMap(map[string]string{"CHORUS_SET": "env", "CHORUS_BAD": "x"})
	d := r.WithDefaults(map[string]string{"CHORUS_SET": "default", "CHORUS_GAP": "default"})
	assert.Equal(t, "env", d.String("CHORUS_SET", ""), "the environment wins")
	assert.Equal(t, "default", d.Required("CHORUS_GAP"))
	assert.Equal(t, 1, d.Int("CHORUS_BAD", 1, 0))
	d.Required("CHORUS_NOWHERE")
	require.Error(t, r.Err())
	assert.Contains(t, r.Err().Error(), "CHORUS_BAD")
	assert.Contains(t, r.Err().Error(), "CHORUS_NOWHERE")
}

func TestDurationOrZeroAcceptsZeroButNotNegative(t *testing.T) {
	t.Parallel()
	r := FromMap(map[string]string{"CHORUS_ZERO": "0s", "CHORUS_NEG": "-1s"})
	assert.Equal(t, time.Duration(0), r.DurationOrZero("CHORUS_ZERO", time.Second))
	assert.Equal(t, time.Second, r.DurationOrZero("CHORUS_NEG", time.Second))
	require.Error(t, r.Err())
	assert.NotContains(t, r.Err().Error(), "CHORUS_ZERO")
	assert.Contains(t, r.Err().Error(), "CHORUS_NEG")
}

func TestErrorsDoNotPrintURLPasswords(t *testing.T) {
	t.Parallel()
	r := FromMap(map[string]string{"CHORUS_REDIS_URL": "redis://user:s3cret@host:6379/x/y", "CHORUS_MODE": "postgres://u:s3cret@h/db"})
	r.OneOf("CHORUS_MODE", "a", "a", "b")
	r.Int("CHORUS_REDIS_URL", 0, 0)
	require.Error(t, r.Err())
	assert.NotContains(t, r.Err().Error(), "s3cret")
	assert.Contains(t, r.Err().Error(), "CHORUS_REDIS_URL")
}

func TestSomeOfReadsAListOfAllowedNames(t *testing.T) {
	t.Parallel()
	r := FromMap(map[string]string{"CHORUS_OK": "a, c", "CHORUS_BAD": "a,x"})
	assert.Equal(t, []string{"a", "c"}, r.SomeOf("CHORUS_OK", "a", "b", "c"))
	assert.Nil(t, r.SomeOf("CHORUS_UNSET", "a"))
	require.NoError(t, r.Err())
	assert.Nil(t, r.SomeOf("CHORUS_BAD", "a", "b"))
	require.Error(t, r.Err())
	assert.Contains(t, r.Err().Error(), "CHORUS_BAD")
}

// The manifests test learns what a process reads from Vars: every variable once, with its
// default, whether it is required and whether it is a secret, through WithDefaults too.
func TestVarsListsWhatWasRead(t *testing.T) {
	t.Parallel()
	r := FromMap(map[string]string{"CHORUS_KEY": "k"})
	r.String("CHORUS_ADDR", "127.0.0.1:1")
	r.Int("CHORUS_N", 3, 1)
	r.String("CHORUS_ADDR", "again")
	r.Secret("CHORUS_KEY", "")
	r.Secret("CHORUS_DEV_KEY", "dev")
	r.WithDefaults(map[string]string{"CHORUS_ISSUER": "x"}).Required("CHORUS_ISSUER")
	assert.Equal(t, []Var{
		{Name: "CHORUS_ADDR", Default: "127.0.0.1:1"},
		{Name: "CHORUS_N", Default: "3"},
		{Name: "CHORUS_KEY", Required: true, Secret: true},
		{Name: "CHORUS_DEV_KEY", Default: "dev", Secret: true},
		{Name: "CHORUS_ISSUER", Required: true},
	}, r.Vars())
	require.NoError(t, r.Err())
}

func TestSecretRequiredWithoutDevDefault(t *testing.T) {
	t.Parallel()
	r := FromMap(nil)
	assert.Equal(t, "dev", r.Secret("CHORUS_A", "dev"))
	assert.Empty(t, r.Secret("CHORUS_B", ""))
	require.Error(t, r.Err())
	assert.Equal(t, "CHORUS_B is required", r.Err().Error())
}

func TestDurations(t *testing.T) {
	t.Parallel()
	def := []time.Duration{time.Second}
	r := FromMap(map[string]string{"CHORUS_OK": "5s, 5m,30m", "CHORUS_BAD": "5s,0s"})
	assert.Equal(t, []time.Duration{5 * time.Second, 5 * time.Minute, 30 * time.Minute}, r.Durations("CHORUS_OK", def))
	assert.Equal(t, def, r.Durations("CHORUS_UNSET", def))
	assert.Equal(t, def, r.Durations("CHORUS_BAD", def))
	require.Error(t, r.Err())
	assert.Contains(t, r.Err().Error(), "CHORUS_BAD")
	assert.NotContains(t, r.Err().Error(), "CHORUS_OK")
}
