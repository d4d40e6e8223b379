package gateway

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestJSONPathAt(t *testing.T) {
	b := []byte(`{"a": {"b": [1, {"c": "x"}]}, "d": true}`)
	for _, tc := range []struct {
		at    string
		path  string
		isKey bool
	}{{`{"a"`, "", false}, {`"a"`, "a", true}, {`[1`, "a.b", false}, {`1,`, "a.b[0]", false}, {`"c"`, "a.b[1].c", true}, {`"x"`, "a.b[1].c", false}, {`true`, "d", false}} {
		path, isKey := jsonPathAt(b, bytes.Index(b, []byte(tc.at)))
		assert.Equal(t, tc.path, path, tc.at)
		assert.Equal(t, tc.isKey, isKey, tc.at)
	}
}
