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
}

// New returns a Server that queues phone lookups on lookups, import jobs on imports, and signs
// list cursors with cursors.
func New(st *store.Store, lookups store.LookupQueue, imports store.ImportQueue, cursors *cursor.Codec) *Server {
	return &Server{store: st, lookups: lookups, imports: imports, cursors: cursors}
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
