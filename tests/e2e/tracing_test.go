package e2e

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/chorus-sms/chorus/pkg/telemetry"
)

// One REST request is one trace: the gateway's HTTP span, its gRPC call, the contacts
// service's handling of it and that service's SQL all share the trace id.
func TestARequestIsOneTraceAcrossServicesAndTheDatabase(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)))
	_, err := telemetry.Setup(t.Context(), "e2e")
	require.NoError(t, err)

	e := newEnv(t, nil)
	c := e.newMember("read")
	res := c.do("GET", "/api/contacts?search=nobody", nil)
	require.Equal(t, 200, res.Status, "%s", res.Body)

	// A server span ends after its response is on the wire, so the spans are awaited.
	want := map[string]bool{"gateway → contacts gRPC": true, "contacts handles it": true, "contacts queries PostgreSQL": true}
	var kinds map[string]bool
	eventually(t, 5*time.Second, "every hop's span in the request's trace", func() bool {
		kinds = traceHops(rec.Ended())
		return len(kinds) == len(want)
	})
	assert.Equal(t, want, kinds)
}

// traceHops names the hops found in the trace of the gateway's server span.
func traceHops(spans []sdktrace.ReadOnlySpan) map[string]bool {
	var root trace.TraceID
	for _, s := range spans {
		if s.SpanKind() == trace.SpanKindServer && !s.Parent().IsValid() && s.InstrumentationScope().Name == "go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp" {
			root = s.SpanContext().TraceID()
		}
	}
	kinds := map[string]bool{}
	if !root.IsValid() {
		return kinds
	}
	for _, s := range spans {
		if s.SpanContext().TraceID() != root {
			continue
		}
		switch {
		case s.SpanKind() == trace.SpanKindClient && s.Name() == "chorus.contacts.v1.ContactsService/ListContacts":
			kinds["gateway → contacts gRPC"] = true
		case s.SpanKind() == trace.SpanKindServer && s.Name() == "chorus.contacts.v1.ContactsService/ListContacts":
			kinds["contacts handles it"] = true
		case s.InstrumentationScope().Name == "github.com/exaring/otelpgx":
			kinds["contacts queries PostgreSQL"] = true
		}
	}
	return kinds
}
