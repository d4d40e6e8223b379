// Package csvexport writes the analytics campaigns export: RFC 4180 CSV (encoding/csv: quoted
// where needed, CRLF line ends) whose cells cannot run as spreadsheet formulas.
package csvexport

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"strconv"
	"time"

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
			Cell(c.Name), Cell(c.Status), itoa(c.TotalCount), itoa(c.Sent), itoa(c.Delivered), itoa(c.Failed),
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

// Cell neutralizes a text that a spreadsheet would read as a formula (one starting with =, +,
// -, @, or a tab or carriage return that hides one; OWASP's CSV injection advice) by putting a
// single quote before it. Numbers and times are written by us and never need it.
func Cell(s string) string {
	if s != "" && (s[0] == '=' || s[0] == '+' || s[0] == '-' || s[0] == '@' || s[0] == '\t' || s[0] == '\r') {
		return "'" + s
	}
	return s
}
