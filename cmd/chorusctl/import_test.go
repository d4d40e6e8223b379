package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-sms/chorus/pkg/pgtest"
	"github.com/chorus-sms/chorus/pkg/process"
	"github.com/chorus-sms/chorus/pkg/redistest"
	"github.com/chorus-sms/chorus/pkg/registry"
	"github.com/chorus-sms/chorus/pkg/servetest"
	"github.com/chorus-sms/chorus/pkg/service"
	"github.com/chorus-sms/chorus/services/contacts"
)

// An operator imports a file through a real contacts service: a bar on stderr, the final
// counts on stdout.
func TestImportShowsProgressAndCounts(t *testing.T) {
	redisURL, _ := redistest.New(t)
	svc, err := contacts.New(context.Background(), contacts.Config{
		Storage: service.Storage{DatabaseURL: pgtest.NewDatabase(t), RedisURL: redisURL}, CursorSecret: "test", LookupProvider: "sandbox",
		Wiring: process.Wiring{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))},
	})
	require.NoError(t, err)
	t.Setenv(registry.Contacts.AddrVar, servetest.Serve(t, svc).Target())
	file := filepath.Join(t.TempDir(), "contacts.csv")
	require.NoError(t, os.WriteFile(file, []byte("phone,firstName\n2025550101,Ada\n(202) 555-0101,Ada\nnope,X\n"), 0o600))

	r := runCtl("import", "--org", uuid.NewString(), file)
	require.Equal(t, 0, r.code, r.stderr)
	var out importResult
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &out))
	assert.Equal(t, "completed", out.Status)
	assert.EqualValues(t, 3, out.Total)
	assert.EqualValues(t, 1, out.Created)
	assert.EqualValues(t, 1, out.Merged)
	assert.EqualValues(t, 1, out.Rejected)
	assert.Equal(t, "GET /api/contacts/imports/"+out.ID+"/rejected", out.Rejection)
	assert.Contains(t, r.stderr, "upload [########################################] 100%")
	assert.Contains(t, r.stderr, "merge  [########################################] 100% 3/3\n")

	r = runCtl("import", "--org", "acme", file)
	assert.Equal(t, 1, r.code)
	assert.Equal(t, "chorusctl: --org must be an organization id\n", r.stderr)
	r = runCtl("import", "--org", uuid.NewString(), filepath.Join(t.TempDir(), "missing.csv"))
	assert.Equal(t, 1, r.code)
}
