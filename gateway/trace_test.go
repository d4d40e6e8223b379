package gateway_test

import (
	"context"
	"log/slog"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chorus-sms/chorus/gateway"
	"github.com/chorus-sms/chorus/pkg/telemetry"
)

// With no exporter configured, a caller's W3C trace context still names the request in the
// gateway's log lines; a request without one logs no trace.
func TestRequestLogCarriesTheCallersTrace(t *testing.T) {
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	_, err := telemetry.Setup(context.Background(), "gateway")
	require.NoError(t, err)
	logs := &syncBuffer{}
	e := newEnv(t, func(c *gateway.Config) {
		c.Logger = slog.New(telemetry.LogHandler(slog.NewJSONHandler(logs, nil)))
	})
	org := e.member("alice", "read")
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	res := e.do(request{method: http.MethodGet, path: "/api/contacts", token: e.token("alice"), org: org,
		header: http.Header{"Traceparent": {"00-" + traceID + "-00f067aa0ba902b7-01"}}})
	require.Equal(t, http.StatusOK, res.status, "%s", res.body)
	assert.Contains(t, logs.String(), `"trace_id":"`+traceID+`"`)

	before := logs.String()
	res = e.get("/api/contacts", "alice", org)
	require.Equal(t, http.StatusOK, res.status, "%s", res.body)
	assert.NotContains(t, logs.String()[len(before):], "trace_id")
}
