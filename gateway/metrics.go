package gateway

import (
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are the gateway's Prometheus collectors. Each Gateway has its own registry, so
// several gateways in one process (tests, the all-in-one binary) do not collide.
type metrics struct {
	registry *prometheus.Registry
	requests *prometheus.CounterVec
	latency  *prometheus.HistogramVec
	failOpen prometheus.Counter

	mu     sync.RWMutex
	series map[seriesKey]series
}

func newMetrics() *metrics {
	m := &metrics{
		series:   map[seriesKey]series{},
		registry: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "chorus_gateway_http_requests_total",
			Help: "HTTP requests by method, route pattern and status.",
		}, []string{"method", "route", "status"}),
		latency: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "chorus_gateway_http_request_duration_seconds",
			Help:    "HTTP request latency by method, route pattern and status.",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"method", "route", "status"}),
		failOpen: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "chorus_gateway_ratelimit_fail_open_total",
			Help: "Requests served without a rate-limit decision because Redis did not answer.",
		}),
	}
	m.registry.MustRegister(
		m.requests, m.latency, m.failOpen,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return m
}

// knownMethods bounds the method label; anything else is "OTHER".
var knownMethods = map[string]bool{
	http.MethodGet: true, http.MethodHead: true, http.MethodPost: true, http.MethodPut: true,
	http.MethodPatch: true, http.MethodDelete: true, http.MethodOptions: true,
}

func (m *metrics) observe(method, route string, code int, d time.Duration) {
	if !knownMethods[method] {
		method = "OTHER"
	}
	k := seriesKey{method, route, code}
	m.mu.RLock()
	s, ok := m.series[k]
	m.mu.RUnlock()
	if !ok {
		labels := prometheus.Labels{"method": method, "route": route, "status": strconv.Itoa(code)}
		s = series{requests: m.requests.With(labels), latency: m.latency.With(labels)}
		m.mu.Lock()
		m.series[k] = s
		m.mu.Unlock()
	}
	s.requests.Inc()
	s.latency.Observe(d.Seconds())
}

// seriesKey names a request's series: the labels are bounded (known methods, route patterns,
// statuses), so the series found once are kept instead of being looked up by their labels on
// every request.
type seriesKey struct {
	method, route string
	code          int
}

type series struct {
	requests prometheus.Counter
	latency  prometheus.Observer
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{})
}
