package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/chorus-sms/chorus/pkg/phone"
	"github.com/chorus-sms/chorus/pkg/sandbox"
	"github.com/chorus-sms/chorus/services/messaging"
)

// stringList is a repeatable flag.
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, ",") }

func (l *stringList) Set(v string) error {
	*l = append(*l, v)
	return nil
}

// inboundResult is what `sandbox inbound` prints.
type inboundResult struct {
	Status     int    `json:"status"`
	MessageSID string `json:"messageSid"`
}

// sandboxInbound delivers a text from a phone to one of an organization's sandbox numbers
// through the public webhook, signed like the sandbox carrier signs it. A non-2xx answer is
// printed too, its body goes to stderr, and the command fails.
func sandboxInbound(ctx context.Context, fs *flag.FlagSet, args []string, stderr io.Writer) (any, error) {
	to := fs.String("to", "", "the organization's number the text is sent to")
	from := fs.String("from", "", "the sender's phone, E.164 or any US format")
	body := fs.String("body", "", "the text")
	var media stringList
	fs.Var(&media, "media", "public URL of an attachment (repeatable)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	// A carrier sends E.164 whatever the sender typed.
	toE164, err := phone.Normalize(*to)
	if err != nil {
		return nil, errors.New("--to must be a phone number")
	}
	fromE164, err := phone.Normalize(*from)
	if err != nil {
		return nil, errors.New("--from must be a phone number")
	}
	if *body == "" && len(media) == 0 {
		return nil, errors.New("--body or --media is required")
	}
	form, err := sandbox.Text{To: toE164, From: fromE164, Body: *body, Media: media}.Form()
	if err != nil {
		return nil, err
	}
	res, err := sandbox.Post(ctx, http.DefaultClient, publicURL(),
		env("CHORUS_SANDBOX_AUTH_TOKEN", messaging.DevSandboxToken), form)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	out := inboundResult{Status: res.StatusCode, MessageSID: form.Get("MessageSid")}
	if res.StatusCode/100 == 2 {
		return out, nil
	}
	raw, err := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	if err != nil {
		return out, fmt.Errorf("the gateway answered %s; reading its body: %w", res.Status, err)
	}
	fmt.Fprintln(stderr, strings.TrimRight(string(raw), "\n"))
	return out, fmt.Errorf("the gateway answered %s", res.Status)
}
