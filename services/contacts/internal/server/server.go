// Package server implements chorus.contacts.v1.ContactsService: validation, tenancy checks and
// the mapping of store results to API errors.
package server

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/google/uuid"
	"google.golang.org/grpc/codes"

	"github.com/chorus-sms/chorus/pkg/apierr"
	"github.com/chorus-sms/chorus/pkg/cursor"
	contactsv1 "github.com/chorus-sms/chorus/proto/gen/go/contacts/v1"
	"github.com/chorus-sms/chorus/services/contacts/internal/store"
)

// Server answers the ContactsService RPCs.
type Server struct {
	contactsv1.UnimplementedContactsServiceServer
	store   *store.Store
	lookups store.LookupQueue
	imports store.ImportQueue
	cursors *cursor.Codec
	chunk   int32 // lines of an upload of declared length staged per transaction
}

// New returns a Server that queues phone lookups on lookups, import jobs on imports, signs
// list cursors with cursors, and stages an upload of declared length chunk lines a
// transaction (0: store.ImportChunk).
func New(st *store.Store, lookups store.LookupQueue, imports store.ImportQueue, cursors *cursor.Codec, chunk int32) *Server {
	if chunk <= 0 {
		chunk = store.ImportChunk
	}
	return &Server{store: st, lookups: lookups, imports: imports, cursors: cursors, chunk: chunk}
}

// pathID parses an id from the URL path. One that is not a UUID cannot exist, so it is answered
// exactly as a missing one.
func pathID(s, what string) (uuid.UUID, error) {
	id, err := uuid.Parse(s)
	if err != nil {
		return uuid.Nil, apierr.NotFound(what + " not found")
	}
	return id, nil
}

// storeError maps the store's sentinel errors to API errors; others pass through to be masked.
func storeError(err error, what string) error {
	var (
		dup  *store.DuplicateError
		over *store.LimitError
	)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return apierr.NotFound(what + " not found")
	case errors.Is(err, store.ErrAmbiguous):
		return apierr.Conflict("the phone belongs to one contact and the email to another; merging cannot resolve it")
	case errors.Is(err, store.ErrImportEnded):
		return apierr.New(codes.FailedPrecondition, apierr.ReasonFailedPrecondition,
			"the import failed while the file was being sent (no line arrived for too long); send the file again")
	case errors.Is(err, store.ErrSegmentLimit):
		return apierr.New(codes.FailedPrecondition, apierr.ReasonSegmentLimitReached,
			"an organization keeps at most "+strconv.Itoa(store.MaxSegments)+" segments; delete one first")
	case errors.As(err, &dup):
		return apierr.Conflict("another " + what + " already has this " + dup.Field)
	case errors.As(err, &over):
		fields := apierr.Fields{}
		for _, o := range over.Over {
			fields.Add(o.Field, fmt.Sprintf("a contact has at most %d %s; this merge would make %d", o.Max, o.Noun, o.Would))
		}
		return fields.Err()
	}
	return err
}
