// Command chorusctl is the operator CLI: it creates organizations and memberships through the
// internal orgs API, sets up billing accounts and plans and grants credits through the internal
// billing API, adds sending numbers through the internal messaging API, imports contact files
// through the internal contacts API, delivers sandbox texts
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
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"

	"github.com/chorus-sms/chorus/pkg/clients"
	"github.com/chorus-sms/chorus/pkg/devauth"
	"github.com/chorus-sms/chorus/pkg/phone"
	"github.com/chorus-sms/chorus/pkg/registry"
	billingv1 "github.com/chorus-sms/chorus/proto/gen/go/billing/v1"
	orgsv1 "github.com/chorus-sms/chorus/proto/gen/go/orgs/v1"
)

// commands are chorusctl's command lines: the name, then its flags as usage shows them.
var commands = []struct{ name, flags string }{
	{"org create", "--name NAME [--timezone TZ] [--sandbox] [--pricing MODEL] [--credits N]\n" +
		"                       [--number E164] [--help-text TEXT]"},
	{"member add", "--org ID --user SUBJECT --access read|write|admin"},
	{"credits grant", "--org ID --amount N [--included] [--key KEY]"},
	{"plan set", "--org ID --pricing MODEL [--included N --interval month|year] [--period-end RFC3339]"},
	{"billing set-status", "--org ID --status active|past_due|suspended|overage_warning|archived"},
	{"number add", "--org ID --number E164 [--default] [--mps N]"},
	{"sandbox inbound", "--to E164 --from PHONE --body TEXT [--media URL]..."},
	{"token", "--user SUBJECT [--ttl 1h]"},
	{"import", "--org ID FILE"},
}

// usage is printed on a bad command line, or on stdout when asked for; the services'
// addresses come from the registry.
var usage = usageOf("") + `
environment:
` + addrVars(registry.Orgs, registry.Contacts, registry.Billing, registry.Messaging) +
	`  CHORUS_PUBLIC_URL          the gateway's public URL (default http://$` + registry.Gateway.AddrVar + `, else ` + defaultPublicURL + `)
  CHORUS_SANDBOX_AUTH_TOKEN  signs sandbox webhooks (default: the local stack's)
  CHORUS_DEV_KEY             dev signing key of the local stack (default .run/dev-key.pem)

"chorusctl help COMMAND" or "chorusctl COMMAND --help" describes a command's flags.
`

// usageOf lists the command lines whose name starts with prefix.
func usageOf(prefix string) string {
	var b strings.Builder
	b.WriteString("usage:\n")
	for _, c := range commands {
		if strings.HasPrefix(c.name, prefix) {
			fmt.Fprintf(&b, "  chorusctl %s %s\n", c.name, c.flags)
		}
	}
	return b.String()
}

// isGroup reports whether word starts two-word commands ("org" of "org create").
func isGroup(word string) bool {
	for _, c := range commands {
		if strings.HasPrefix(c.name, word+" ") {
			return true
		}
	}
	return false
}

func isCommand(name string) bool {
	for _, c := range commands {
		if c.name == name {
			return true
		}
	}
	return false
}

func main() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	code := chorusctl(ctx, os.Args[1:], os.Stdout, os.Stderr)
	cancel()
	os.Exit(code)
}

// Exit statuses: a command that failed, and a command line that is not one (usage on stderr).
const (
	exitFailed   = 1
	exitBadUsage = 2
)

// isHelp reports whether arg asks for help.
func isHelp(arg string) bool {
	return arg == "help" || arg == "-h" || arg == "-help" || arg == "--help"
}

// chorusctl runs one command line and returns the exit status. Help asked for (help,
// --help, help COMMAND, COMMAND --help) is printed on stdout with status 0; a wrong command
// or flag prints the usage on stderr with status 2.
func chorusctl(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitBadUsage
	}
	if isHelp(args[0]) {
		if len(args) == 1 {
			fmt.Fprint(stdout, usage)
			return 0
		}
		args = append(slices.Clone(args[1:]), "--help") // help COMMAND is COMMAND --help
	}
	name, flags := args[0], args[1:]
	if isGroup(name) {
		if len(flags) == 0 || !isCommand(name+" "+flags[0]) {
			if len(flags) > 0 && isHelp(flags[0]) {
				fmt.Fprint(stdout, usageOf(name+" "))
				return 0
			}
			fmt.Fprintf(stderr, "chorusctl: %q needs one of its commands\n%s", name, usageOf(name+" "))
			return exitBadUsage
		}
		name, flags = name+" "+flags[0], flags[1:]
	}
	if !isCommand(name) {
		fmt.Fprintf(stderr, "chorusctl: unknown command %q\n%s", name, usage)
		return exitBadUsage
	}
	fs := flag.NewFlagSet("chorusctl "+name, flag.ContinueOnError)
	fs.SetOutput(stderr) // where the flag package reports a bad flag
	badFlags := false
	fs.Usage = func() { badFlags = true } // printed below, on stdout when asked for
	out, err := run(ctx, name, fs, flags, stderr)
	if errors.Is(err, flag.ErrHelp) {
		printCommandUsage(stdout, name, fs)
		return 0
	}
	if badFlags {
		printCommandUsage(stderr, name, fs)
		return exitBadUsage
	}
	if out != nil { // printed even on failure when the command has an outcome to report
		_ = json.NewEncoder(stdout).Encode(out)
	}
	if err != nil {
		if st, ok := status.FromError(err); ok {
			err = errors.New(st.Message())
		}
		fmt.Fprintln(stderr, "chorusctl:", err)
		return exitFailed
	}
	return 0
}

// printCommandUsage prints one command's line and its flags.
func printCommandUsage(w io.Writer, name string, fs *flag.FlagSet) {
	fmt.Fprint(w, usageOf(name))
	fmt.Fprintln(w, "\nflags:")
	fs.SetOutput(w)
	fs.PrintDefaults()
}

// run runs the command name with its flags; fs is the command's flag set, empty.
func run(ctx context.Context, name string, fs *flag.FlagSet, args []string, stderr io.Writer) (any, error) {
	switch name {
	case "org create":
		name := fs.String("name", "", "organization name")
		tz := fs.String("timezone", "", "IANA timezone (default America/New_York)")
		sandbox := fs.Bool("sandbox", false, "sandbox organization: sends go to the sandbox carrier, no credits")
		pricing := fs.String("pricing", "", "open a billing account: unlimited, per_message or full_service")
		credits := fs.Int("credits", 0, "purchased credits to grant the new organization")
		number := fs.String("number", "", "sending number to add as the organization's default")
		helpText := fs.String("help-text", "", "answer to a HELP or INFO text (default: one naming the organization)")
		noStateRules := fs.Bool("no-state-quiet-hours", false, "do not keep to state quiet-hours laws narrower than 08:00-21:00 (docs/quiet-hours.md)")
		if err := fs.Parse(args); err != nil {
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
			res, err := c.CreateOrganization(ctx, &orgsv1.CreateOrganizationRequest{Name: *name, Timezone: *tz, Sandbox: *sandbox, HelpText: *helpText, StateQuietHoursOff: *noStateRules})
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
			added, err := addNumber(ctx, org, *number, true, 0)
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
		if err := fs.Parse(args); err != nil {
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
		if err := fs.Parse(args); err != nil {
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
		return planSet(ctx, fs, args)
	case "number add":
		org := fs.String("org", "", "organization id")
		number := fs.String("number", "", "the number, E.164 or any US format")
		isDefault := fs.Bool("default", false, "make it the organization's default sending number (its first number always is)")
		mps := fs.Int("mps", 0, "messages per second the number may send (default: what it has; a new number: CHORUS_NUMBER_RATE)")
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if *mps < 0 {
			return nil, fmt.Errorf("--mps must be a positive number of messages per second")
		}
		added, err := addNumber(ctx, *org, *number, *isDefault, *mps)
		if err != nil {
			return nil, err // not a nil *addedNumber, which would print as null
		}
		return added, nil
	case "sandbox inbound":
		return sandboxInbound(ctx, fs, args, stderr)
	case "token":
		user := fs.String("user", "", "user subject")
		ttl := fs.Duration("ttl", time.Hour, "token lifetime, e.g. 8h or 720h")
		if err := fs.Parse(args); err != nil {
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
	case "billing set-status":
		return billingSetStatus(ctx, fs, args)
	case "import":
		return importFile(ctx, fs, args, stderr)
	}
	return nil, fmt.Errorf("command %q is listed but not run", name)
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

// publicURL is where the gateway answers, found as the stack finds it: CHORUS_PUBLIC_URL, else
// the gateway's listen address (CHORUS_HTTP_ADDR), else the registry's default.
func publicURL() string {
	if u := os.Getenv("CHORUS_PUBLIC_URL"); u != "" {
		return u
	}
	return "http://" + env(registry.Gateway.AddrVar, registry.Gateway.Addr)
}

func addrVars(svcs ...registry.Service) string {
	var b strings.Builder
	for _, s := range svcs {
		fmt.Fprintf(&b, "  %-26s %s service gRPC address (default %s)\n", s.AddrVar, s.Name, s.Addr)
	}
	return b.String()
}

// dial connects to svc where its registry variable says, else at its default address.
func dial(svc registry.Service) (*grpc.ClientConn, error) {
	return clients.DialGRPC(svc.Name, env(svc.AddrVar, svc.Addr))
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
