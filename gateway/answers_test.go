package gateway_test

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/encoding/protojson"
)

// A list page leaves the gateway as protojson writes it, byte for byte, with its length.
func TestListPageIsProtojsonBytes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	page := listPage()
	e.contacts.answerPages(page)
	org := e.member("reader", "read")
	res := e.get("/api/contacts?limit=50", "reader", org)
	require.Equal(t, http.StatusOK, res.status, "%s", res.body)
	want, err := protojson.MarshalOptions{EmitUnpopulated: true}.Marshal(page)
	require.NoError(t, err)
	assert.Equal(t, string(want), string(res.body))
	assert.Equal(t, strconv.Itoa(len(want)), res.header.Get("Content-Length"))
	assert.Equal(t, "application/json", res.header.Get("Content-Type"))
}
