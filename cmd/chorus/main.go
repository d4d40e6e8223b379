// Command chorus runs the whole Chorus stack in one process for local use (`make run`): every
// service on its own loopback gRPC listener, the REST gateway, and a dev identity provider.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	_ "time/tzdata" // timezone validation must not depend on the host's zoneinfo

	"github.com/chorus-sms/chorus/pkg/envconfig"
	"github.com/chorus-sms/chorus/pkg/process"
	"github.com/chorus-sms/chorus/pkg/telemetry"
	"github.com/chorus-sms/chorus/stack"
)

func main() {
	process.TuneGC()
	log := slog.New(telemetry.LogHandler(slog.NewJSONHandler(os.Stderr, nil)))
	env := envconfig.New()
	cfg := stack.ConfigFromEnv(env)
	if err := env.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "chorus: bad configuration:", err)
		os.Exit(2)
	}
	cfg.Logger = log
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	shutdown, err := telemetry.Setup(ctx, "chorus")
	if err != nil {
		log.Error("chorus failed to start", "err", err)
		os.Exit(1)
	}
	defer func() { _ = shutdown(context.WithoutCancel(ctx)) }()
	st, err := stack.Start(ctx, cfg)
	if err != nil {
		log.Error("chorus failed to start", "err", err)
		os.Exit(1)
	}
	defer st.Close()
	fmt.Fprintf(os.Stderr, "\nChorus is serving the REST API on %s\n", st.HTTPURL)
	if st.PublicURL != st.HTTPURL {
		fmt.Fprintf(os.Stderr, "Carrier webhooks and short links are signed and built for %s\n", st.PublicURL)
	}
	if st.Key != nil {
		fmt.Fprintf(os.Stderr, "Get a token:  bin/chorusctl token --user alice\n")
	}
	fmt.Fprintf(os.Stderr, "Text a number: bin/chorusctl sandbox inbound --to NUMBER --from PHONE --body TEXT\n")
	fmt.Fprintf(os.Stderr, "Stop with Ctrl-C.\n\n")
	if err := st.Wait(); err != nil {
		log.Error("chorus stopped", "err", err)
		os.Exit(1)
	}
}
