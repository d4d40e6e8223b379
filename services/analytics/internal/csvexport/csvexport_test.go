package csvexport_test

import (
	"encoding/csv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-sms/chorus/services/analytics/internal/csvexport"
	"github.com/chorus-sms/chorus/services/analytics/internal/store"
)

// The export reads back as the same cells (quotes, commas and line breaks survive), and a
// name a spreadsheet would run as a formula is prefixed with a quote.
func TestExportQuotesAndDisarmsFormulas(t *testing.T) {
	created := time.Date(2026, 3, 1, 14, 30, 0, 0, time.FixedZone("x", -6*3600))
	done := created.Add(time.Hour)
	out, err := csvexport.Campaigns([]store.Campaign{
		{Name: `Spring "sale", part 1` + "\nline two", Status: "completed", TotalCount: 10, Sent: 9, Delivered: 8, Failed: 1, CreatedAt: created, CompletedAt: &done},
		{Name: "=HYPERLINK(\"http://evil\")", Status: "sending", CreatedAt: created},
		{Name: "+1 offer", Status: "draft", CreatedAt: created},
		{Name: "-5%", Status: "draft", CreatedAt: created},
		{Name: "@sum", Status: "draft", CreatedAt: created},
		{Name: "\u200B=SUM(A1)", Status: "draft", CreatedAt: created},
	})
	require.NoError(t, err)
	assert.True(t, strings.HasSuffix(string(out), "\r\n"), "CRLF line ends")
	rows, err := csv.NewReader(strings.NewReader(string(out))).ReadAll()
	require.NoError(t, err)
	require.Len(t, rows, 7)
	assert.Equal(t, []string{"Campaign Name", "Status", "Total Recipients", "Sent", "Delivered", "Failed", "Created At", "Completed At"}, rows[0])
	assert.Equal(t, []string{`Spring "sale", part 1` + "\nline two", "completed", "10", "9", "8", "1", "2026-03-01T20:30:00Z", "2026-03-01T21:30:00Z"}, rows[1])
	assert.Equal(t, `'=HYPERLINK("http://evil")`, rows[2][0])
	assert.Equal(t, "", rows[2][7], "not completed")
	assert.Equal(t, "'+1 offer", rows[3][0])
	assert.Equal(t, "'-5%", rows[4][0])
	assert.Equal(t, "'@sum", rows[5][0])
	assert.Equal(t, "'\u200B=SUM(A1)", rows[6][0], "behind an invisible character too (pkg/csvguard)")
}
