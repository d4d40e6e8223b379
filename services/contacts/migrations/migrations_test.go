package migrations_test

import (
	"io/fs"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-sms/chorus/pkg/outbox"
	"github.com/chorus-sms/chorus/services/contacts/migrations"
)

// The relay reads the outbox table pkg/outbox defines; the contacts schema must hold exactly it.
func TestOutboxTableIsTheOneOutboxDefines(t *testing.T) {
	t.Parallel()
	sql, err := fs.ReadFile(migrations.FS, "00001_contacts.sql")
	require.NoError(t, err)
	assert.True(t, strings.Contains(string(sql), outbox.OutboxDDL), "migration 00001 must contain outbox.OutboxDDL verbatim")
}
