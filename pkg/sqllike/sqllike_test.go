package sqllike_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-sms/chorus/pkg/pgtest"
	"github.com/chorus-sms/chorus/pkg/sqllike"
)

func TestContains(t *testing.T) {
	for in, want := range map[string]string{
		"":       "%%",
		"ada":    "%ada%",
		"%":      `%\%%`,
		"_":      `%\_%`,
		`\`:      `%\\%`,
		`50%_\x`: `%50\%\_\\x%`,
		"é%":     `%é\%%`,
	} {
		assert.Equal(t, want, sqllike.Contains(in), in)
	}
}

// The patterns mean what they say to PostgreSQL, with ESCAPE '\' as the queries write it.
func TestContainsInPostgres(t *testing.T) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, pgtest.AdminDSN())
	require.NoError(t, err)
	defer conn.Close(ctx)
	for _, c := range []struct {
		value, search string
		want          bool
	}{
		{"Bo%b", "%", true},
		{"Bob", "%", false},
		{"Cy_x", "_", true},
		{"Cyx", "_", false},
		{`De\e`, `\`, true},
		{"Dee", `\`, false},
		{"Ann", "", true},
		{"50% off", "0% o", true},
		{"50x off", "0% o", false},
	} {
		var got bool
		require.NoError(t, conn.QueryRow(ctx, `SELECT $1::text ILIKE $2 ESCAPE '\'`, c.value, sqllike.Contains(c.search)).Scan(&got))
		assert.Equal(t, c.want, got, "%q ILIKE Contains(%q)", c.value, c.search)
	}
}
