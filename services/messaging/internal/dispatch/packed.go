package dispatch

import (
	"bytes"
	"encoding/json"
)

// packed is a list carried in a job's arguments as one JSON string that holds the list's JSON.
// River indexes every job's arguments with a GIN index, one entry per key and value: a group's
// hundred message ids, or a batch's reports, were hundreds of entries, written again at each of
// the job's writes (inserted, scheduled, fetched, completed). As one long string they are one
// entry. A list queued before it was packed (a JSON array) still reads.
type packed[T any] []T

func (p packed[T]) MarshalJSON() ([]byte, error) {
	inner, err := json.Marshal([]T(p))
	if err != nil {
		return nil, err
	}
	return json.Marshal(string(inner))
}

func (p *packed[T]) UnmarshalJSON(b []byte) error {
	if bytes.HasPrefix(bytes.TrimSpace(b), []byte("[")) {
		return json.Unmarshal(b, (*[]T)(p))
	}
	var inner string
	if err := json.Unmarshal(b, &inner); err != nil {
		return err
	}
	return json.Unmarshal([]byte(inner), (*[]T)(p))
}
