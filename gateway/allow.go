package gateway

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/chorus-sms/chorus/gateway/openapi"
)

// documentedRoutes are the path templates of the served OpenAPI document with the methods each
// declares. A 405 names them in Allow, so the header says what the contract says (the mux
// itself cannot list a path's methods).
var documentedRoutes = sync.OnceValue(func() []documentedRoute {
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(openapi.Spec, &doc); err != nil {
		panic("gateway: the embedded OpenAPI document does not parse: " + err.Error())
	}
	routes := make([]documentedRoute, 0, len(doc.Paths))
	for path, item := range doc.Paths {
		r := documentedRoute{segments: strings.Split(path, "/")}
		for method := range item {
			if m := strings.ToUpper(method); slices.Contains(httpMethods, m) {
				r.methods = append(r.methods, m)
			}
		}
		slices.SortFunc(r.methods, func(a, b string) int { return slices.Index(httpMethods, a) - slices.Index(httpMethods, b) })
		routes = append(routes, r)
	}
	return routes
})

var httpMethods = []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete}

type documentedRoute struct {
	segments []string // "{name}" matches any one non-empty segment
	methods  []string
}

// allowedMethods is the Allow value of the escaped request path: the methods the document
// declares for every template the path matches.
func allowedMethods(escapedPath string) string {
	segs := strings.Split(escapedPath, "/")
	var methods []string
	for _, r := range documentedRoutes() {
		if r.matches(segs) {
			for _, m := range r.methods {
				if !slices.Contains(methods, m) {
					methods = append(methods, m)
				}
			}
		}
	}
	slices.SortFunc(methods, func(a, b string) int { return slices.Index(httpMethods, a) - slices.Index(httpMethods, b) })
	return strings.Join(methods, ", ")
}

func (r documentedRoute) matches(segs []string) bool {
	if len(segs) != len(r.segments) {
		return false
	}
	for i, s := range r.segments {
		if strings.HasPrefix(s, "{") && strings.HasSuffix(s, "}") {
			if segs[i] == "" {
				return false
			}
			continue
		}
		if s != segs[i] {
			return false
		}
	}
	return true
}
