package apierr

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"google.golang.org/grpc/codes"
)

func TestValidationNamesEveryFieldAndReadsBack(t *testing.T) {
	t.Parallel()
	f := Fields{}
	f.Add("state", "must be a US state code")
	f.Add("state", "a second message is ignored")
	f.Add("phone", "must be a valid phone number")
	err := f.Err()
	assert.Equal(t, ReasonValidation, Reason(err))
	assert.Equal(t, map[string]string{"state": "must be a US state code", "phone": "must be a valid phone number"}, FieldViolations(err))
	assert.NoError(t, Fields{}.Err(), "no failures, no error")
	assert.Nil(t, FieldViolations(New(codes.NotFound, ReasonNotFound, "x")), "an error naming no field")
	assert.Nil(t, FieldViolations(errors.New("plain")), "not a status error")
}
