package quiethours

import (
	"fmt"
	"time"

	"google.golang.org/grpc/codes"

	"github.com/chorus-sms/chorus/pkg/apierr"
)

// Refuse is the error of an immediate bulk send (what: "campaigns"; a poll starts at any hour
// and its messages wait for the window) started at now
// outside the window of tz (an empty or unknown zone counts as UTC): 400 QUIET_HOURS naming
// when the window next opens; nil inside the window.
func Refuse(what, tz string, now time.Time) error {
	loc, err := Location(tz)
	if err != nil || tz == "" {
		loc, tz = time.UTC, "UTC"
	}
	if Open(loc, now) {
		return nil
	}
	next := NextOpen(loc, now)
	return apierr.New(codes.InvalidArgument, apierr.ReasonQuietHours, fmt.Sprintf(
		"%s send from %02d:00 to %02d:00 in %s; the next window starts at %s (%s); schedule it with scheduledFor",
		what, Start, End, tz, next.UTC().Format(time.RFC3339), next.Format(time.RFC3339)))
}

// ValidZone accepts IANA zone names only ("Local" is the server's zone, not the customer's).
func ValidZone(tz string) bool {
	if tz == "" || tz == "Local" {
		return false
	}
	_, err := Location(tz)
	return err == nil
}
