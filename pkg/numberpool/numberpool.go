// Package numberpool is the one rule for a number pool's ids, which campaigns check when a
// campaign names them and messaging again when they come with a bulk batch: 1 to Max UUIDs,
// none twice (a repeat is refused rather than collapsed, so a client's mistake is told, not
// hidden).
package numberpool

import (
	"fmt"

	"github.com/google/uuid"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/chorus-sms/chorus/pkg/apierr"
)

// Max bounds a pool: Twilio's Messaging Services hold up to 400 numbers.
const Max = 400

// ParseIDs parses a pool's ids, adding to f under field (field[i] for one id) what is wrong.
func ParseIDs(f apierr.Fields, field string, raw []string) []uuid.UUID {
	if n := len(raw); n == 0 || n > Max {
		f.Add(field, fmt.Sprintf("must hold 1 to %d phone number ids", Max))
		return nil
	}
	ids := make([]uuid.UUID, 0, len(raw))
	seen := make(map[uuid.UUID]int, len(raw))
	for i, r := range raw {
		item := fmt.Sprintf("%s[%d]", field, i)
		id, err := uuid.Parse(r)
		if err != nil {
			f.Add(item, "must be a phone number id (UUID)")
			continue
		}
		if j, ok := seen[id]; ok {
			f.Add(item, fmt.Sprintf("repeats %s[%d]", field, j))
			continue
		}
		seen[id] = i
		ids = append(ids, id)
	}
	return ids
}

// FromList parses a pool sent as a JSON array (a ListValue, so that [] is told from an
// omitted field): strings only, then by ParseIDs.
func FromList(f apierr.Fields, field string, list *structpb.ListValue) []uuid.UUID {
	raw := make([]string, len(list.GetValues()))
	for i, v := range list.GetValues() {
		s, ok := v.GetKind().(*structpb.Value_StringValue)
		if !ok {
			f.Add(fmt.Sprintf("%s[%d]", field, i), "must be a phone number id (UUID)")
			return nil
		}
		raw[i] = s.StringValue
	}
	return ParseIDs(f, field, raw)
}
