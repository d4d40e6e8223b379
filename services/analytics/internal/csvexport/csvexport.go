// Package csvexport writes the analytics campaigns export: RFC 4180 CSV (encoding/csv: quoted
// where needed, CRLF line ends) whose text cells go through pkg/csvguard, so none runs as a
// spreadsheet formula.
package csvexport

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"strconv"
	"time"

	"github.com/chorus-sms/chorus/pkg/csvguard"
	"github.com/chorus-sms/chorus/services/analytics/internal/store"
)

// Header is the export's columns, in the spec's order.
var Header = []string{"Campaign Name", "Status", "Total Recipients", "Sent", "Delivered", "Failed", "Created At", "Completed At"}

// Campaigns writes the header and one row per campaign. Times are RFC 3339 UTC; a campaign not
// completed has an empty Completed At.
func Campaigns(cs []store.Campaign) ([]byte, error) {
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	w.UseCRLF = true
	if err := w.Write(Header); err != nil {
		return nil, fmt.Errorf("write export header: %w", err)
	}
	for _, c := range cs {
		completed := ""
		if c.CompletedAt != nil {
			completed = c.CompletedAt.UTC().Format(time.RFC3339)
		}
		row := []string{
			csvguard.Cell(c.Name), csvguard.Cell(c.Status), itoa(c.TotalCount), itoa(c.Sent), itoa(c.Delivered), itoa(c.Failed),
			c.CreatedAt.UTC().Format(time.RFC3339), completed,
		}
		if err := w.Write(row); err != nil {
			return nil, fmt.Errorf("write export row: %w", err)
		}
	}
	w.Flush()
	if err := w.Error(); err != nil {
		return nil, fmt.Errorf("write export: %w", err)
	}
	return buf.Bytes(), nil
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }
