// Command chorusctl is the operator CLI: it creates organizations and memberships through the
// internal orgs API and signs dev access tokens. Every command prints one JSON object on stdout.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/chorus-sms/chorus/cmd/devauth"
	orgsv1 "github.com/chorus-sms/chorus/proto/gen/go/orgs/v1"
)

const usage = `usage:
  chorusctl org create --name NAME [--timezone TZ] [--sandbox]
  chorusctl member add --org ID --user SUBJECT --access read|write|admin
  chorusctl token --user SUBJECT [--ttl 1h]

environment:
  CHORUS_ORGS_ADDR  orgs service gRPC address (default 127.0.0.1:9101)
  CHORUS_DEV_KEY    dev signing key of the local stack (default .run/dev-key.pem)
`

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := run(ctx, os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	if err != nil {
		if st, ok := status.FromError(err); ok {
			err = errors.New(st.Message())
		}
		fmt.Fprintln(os.Stderr, "chorusctl:", err)
		os.Exit(1)
	}
	_ = json.NewEncoder(os.Stdout).Encode(out)
}

func run(ctx context.Context, args []string, stderr io.Writer) (any, error) {
	if len(args) == 0 {
		return nil, flag.ErrHelp
	}
	cmd := args[0]
	if len(args) > 1 && (cmd == "org" || cmd == "member") {
		cmd += " " + args[1]
		args = args[1:]
	}
	fs := flag.NewFlagSet("chorusctl "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	switch cmd {
	case "org create":
		name := fs.String("name", "", "organization name")
		tz := fs.String("timezone", "", "IANA timezone (default America/New_York)")
		sandbox := fs.Bool("sandbox", false, "sandbox organization: sends go to the sandbox carrier, no credits")
		if err := fs.Parse(args[1:]); err != nil {
			return nil, err
		}
		return withOrgs(ctx, func(c orgsv1.OrgsServiceClient) (any, error) {
			res, err := c.CreateOrganization(ctx, &orgsv1.CreateOrganizationRequest{Name: *name, Timezone: *tz, Sandbox: *sandbox})
			if err != nil {
				return nil, err
			}
			return map[string]string{"organizationId": res.GetOrganization().GetId()}, nil
		})
	case "member add":
		org := fs.String("org", "", "organization id")
		user := fs.String("user", "", "user subject (the token's sub claim)")
		access := fs.String("access", "", "read, write or admin")
		if err := fs.Parse(args[1:]); err != nil {
			return nil, err
		}
		level, ok := orgsv1.Access_value["ACCESS_"+strings.ToUpper(*access)]
		if !ok || level == 0 {
			return nil, fmt.Errorf("--access must be read, write or admin")
		}
		return withOrgs(ctx, func(c orgsv1.OrgsServiceClient) (any, error) {
			_, err := c.SetMembership(ctx, &orgsv1.SetMembershipRequest{OrganizationId: *org, UserSubject: *user, Access: orgsv1.Access(level)})
			if err != nil {
				return nil, err
			}
			return map[string]string{"organizationId": *org, "user": *user, "access": *access}, nil
		})
	case "token":
		user := fs.String("user", "", "user subject")
		ttl := fs.Duration("ttl", time.Hour, "token lifetime")
		if err := fs.Parse(args[1:]); err != nil {
			return nil, err
		}
		if *user == "" {
			return nil, fmt.Errorf("--user is required")
		}
		key, err := devauth.LoadOrCreate(env("CHORUS_DEV_KEY", ".run/dev-key.pem"))
		if err != nil {
			return nil, err
		}
		tok, err := key.Sign(*user, *ttl)
		if err != nil {
			return nil, err
		}
		return map[string]string{"token": tok}, nil
	}
	return nil, flag.ErrHelp
}

func withOrgs(ctx context.Context, f func(orgsv1.OrgsServiceClient) (any, error)) (any, error) {
	addr := env("CHORUS_ORGS_ADDR", "127.0.0.1:9101")
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("orgs service at %s: %w", addr, err)
	}
	defer conn.Close()
	return f(orgsv1.NewOrgsServiceClient(conn))
}

func env(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
