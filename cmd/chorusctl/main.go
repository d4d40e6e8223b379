// Command chorusctl is the operator CLI: it creates organizations and memberships through the
// internal orgs API, sets up billing accounts and plans and grants credits through the internal
// billing API, adds sending numbers through the internal messaging API, delivers sandbox texts
// through the public webhook, and signs dev access tokens. Every command prints one JSON object
// on stdout.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"time"

	"github.com/google/uuid"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"

	"github.com/chorus-sms/chorus/cmd/devauth"
	"github.com/chorus-sms/chorus/pkg/phone"
	"github.com/chorus-sms/chorus/pkg/registry"
	"github.com/chorus-sms/chorus/pkg/rpcclient"
	billingv1 "github.com/chorus-sms/chorus/proto/gen/go/billing/v1"
	orgsv1 "github.com/chorus-sms/chorus/proto/gen/go/orgs/v1"
)

// usage is printed on a bad command line; the services' addresses come from the registry.
var usage = `usage:
  chorusctl org create --name NAME [--timezone TZ] [--sandbox] [--pricing MODEL] [--credits N]
                       [--number E164] [--help-text TEXT]
  chorusctl member add --org ID --user SUBJECT --access read|write|admin
  chorusctl credits grant --org ID --amount N [--included] [--key KEY]
  chorusctl plan set --org ID --pricing MODEL [--included N --interval month|year] [--period-end RFC3339]
  chorusctl number add --org ID --number E164 [--default]
  chorusctl sandbox inbound --to E164 --from PHONE --body TEXT [--media URL]...
  chorusctl token --user SUBJECT [--ttl 1h]

environment:
` + addrVars(registry.Orgs, registry.Billing, registry.Messaging) +
	`  CHORUS_PUBLIC_URL          the gateway's public URL (default ` + defaultPublicURL + `)
  CHORUS_SANDBOX_AUTH_TOKEN  signs sandbox webhooks (default: the local stack's)
  CHORUS_DEV_KEY             dev signing key of the local stack (default .run/dev-key.pem)
`

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := run(ctx, os.Args[1:], os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	if out != nil { // printed even on failure when the command has an outcome to report
		_ = json.NewEncoder(os.Stdout).Encode(out)
	}
	if err != nil {
		if st, ok := status.FromError(err); ok {
			err = errors.New(st.Message())
		}
		fmt.Fprintln(os.Stderr, "chorusctl:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stderr io.Writer) (any, error) {
	if len(args) == 0 {
		return nil, flag.ErrHelp
	}
	cmd := args[0]
	if len(args) > 1 && (cmd == "org" || cmd == "member" || cmd == "credits" || cmd == "plan" || cmd == "number" || cmd == "sandbox") {
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
		pricing := fs.String("pricing", "", "open a billing account: unlimited, per_message or full_service")
		credits := fs.Int("credits", 0, "purchased credits to grant the new organization")
		number := fs.String("number", "", "sending number to add as the organization's default")
		helpText := fs.String("help-text", "", "answer to a HELP or INFO text (default: one naming the organization)")
		if err := fs.Parse(args[1:]); err != nil {
			return nil, err
		}
		// Flags are checked before the organization exists, so a typo leaves nothing behind.
		if *credits < 0 || *credits > math.MaxInt32 {
			return nil, fmt.Errorf("--credits must be a number of credits")
		}
		switch *pricing {
		case "", "unlimited", "per_message", "full_service":
		default:
			return nil, fmt.Errorf("--pricing must be unlimited, per_message or full_service")
		}
		if *number != "" {
			if _, err := phone.Normalize(*number); err != nil {
				return nil, fmt.Errorf("--number must be a phone number")
			}
		}
		var org string
		_, err := withOrgs(ctx, func(c orgsv1.OrgsServiceClient) (any, error) {
			res, err := c.CreateOrganization(ctx, &orgsv1.CreateOrganizationRequest{Name: *name, Timezone: *tz, Sandbox: *sandbox, HelpText: *helpText})
			org = res.GetOrganization().GetId()
			return nil, err
		})
		if err != nil {
			return nil, err
		}
		out := map[string]any{"organizationId": org}
		if err := setUpBilling(ctx, org, *pricing, *credits, out); err != nil {
			return nil, fmt.Errorf("organization %s was created, but setting up its billing failed: %s", org, status.Convert(err).Message())
		}
		if *number != "" {
			added, err := addNumber(ctx, org, *number, true)
			if err != nil {
				return nil, fmt.Errorf("organization %s was created, but adding its number failed: %s", org, status.Convert(err).Message())
			}
			out["phoneNumberId"] = added.PhoneNumberID
		}
		return out, nil
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
	case "credits grant":
		org := fs.String("org", "", "organization id")
		amount := fs.Int("amount", 0, "credits to add (at least 1)")
		included := fs.Bool("included", false, "included credits of a full_service plan instead of purchased ones")
		key := fs.String("key", "", "idempotency key: a rerun with the same key grants nothing more (default: a new key)")
		if err := fs.Parse(args[1:]); err != nil {
			return nil, err
		}
		if *amount < 1 || *amount > math.MaxInt32 {
			return nil, fmt.Errorf("--amount must be a positive number of credits")
		}
		if *key == "" {
			*key = "chorusctl:" + uuid.NewString()
		}
		return withBilling(ctx, func(c billingv1.BillingServiceClient) (any, error) {
			res, err := c.GrantCredits(ctx, &billingv1.GrantCreditsRequest{
				OrganizationId: *org, Amount: int32(*amount), Included: *included, IdempotencyKey: *key,
			})
			if err != nil {
				return nil, err
			}
			return map[string]any{
				"organizationId": *org, "available": res.GetCredits().GetAvailable(), "included": res.GetCredits().GetIncluded(),
			}, nil
		})
	case "plan set":
		return planSet(ctx, fs, args[1:])
	case "number add":
		org := fs.String("org", "", "organization id")
		number := fs.String("number", "", "the number, E.164 or any US format")
		isDefault := fs.Bool("default", false, "make it the organization's default sending number (its first number always is)")
		if err := fs.Parse(args[1:]); err != nil {
			return nil, err
		}
		added, err := addNumber(ctx, *org, *number, *isDefault)
		if err != nil {
			return nil, err // not a nil *addedNumber, which would print as null
		}
		return added, nil
	case "sandbox inbound":
		return sandboxInbound(ctx, fs, args[1:], stderr)
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

// setUpBilling opens the new organization's billing account and grants its first credits,
// when asked to, adding what it did to out.
func setUpBilling(ctx context.Context, org, pricing string, credits int, out map[string]any) error {
	if pricing == "" && credits == 0 {
		return nil
	}
	_, err := withBilling(ctx, func(c billingv1.BillingServiceClient) (any, error) {
		if pricing != "" {
			res, err := c.SetAccount(ctx, &billingv1.SetAccountRequest{OrganizationId: org, PricingModel: pricing})
			if err != nil {
				return nil, err
			}
			out["pricingModel"] = res.GetStatus().GetPricingModel()
		}
		if credits > 0 {
			// A fixed key per organization: a retried call cannot grant twice.
			res, err := c.GrantCredits(ctx, &billingv1.GrantCreditsRequest{
				OrganizationId: org, Amount: int32(credits), IdempotencyKey: "org-create:" + org,
			})
			if err != nil {
				return nil, err
			}
			out["available"] = res.GetCredits().GetAvailable()
		}
		return nil, nil
	})
	return err
}

// defaultPublicURL is the gateway of a local stack.
var defaultPublicURL = "http://" + registry.Gateway.Addr

func addrVars(svcs ...registry.Service) string {
	var b strings.Builder
	for _, s := range svcs {
		fmt.Fprintf(&b, "  %-26s %s service gRPC address (default %s)\n", s.AddrVar, s.Name, s.Addr)
	}
	return b.String()
}

// dial connects to svc where its registry variable says, else at its default address.
func dial(svc registry.Service) (*grpc.ClientConn, error) {
	return rpcclient.Dial(svc.Name, env(svc.AddrVar, svc.Addr))
}

func withOrgs(ctx context.Context, f func(orgsv1.OrgsServiceClient) (any, error)) (any, error) {
	conn, err := dial(registry.Orgs)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return f(orgsv1.NewOrgsServiceClient(conn))
}

func withBilling(ctx context.Context, f func(billingv1.BillingServiceClient) (any, error)) (any, error) {
	conn, err := dial(registry.Billing)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	return f(billingv1.NewBillingServiceClient(conn))
}

func env(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}
