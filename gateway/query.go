package gateway

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/grpc-ecosystem/grpc-gateway/v2/runtime"

	"github.com/chorus-sms/chorus/gateway/openapi"
	"github.com/chorus-sms/chorus/pkg/apierr"
)

// documentedQueries are the query parameters the served OpenAPI document declares, by
// "METHOD /path/{template}" of every /api operation (none for most).
var documentedQueries = sync.OnceValue(func() map[string][]string {
	var doc struct {
		Paths map[string]map[string]struct {
			Parameters []struct {
				Name string `json:"name"`
				In   string `json:"in"`
			} `json:"parameters"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(openapi.Spec, &doc); err != nil {
		panic("gateway: the embedded OpenAPI document does not parse: " + err.Error())
	}
	out := map[string][]string{}
	for path, item := range doc.Paths {
		if !strings.HasPrefix(path, "/api/") {
			continue
		}
		for method, op := range item {
			names := []string{}
			for _, p := range op.Parameters {
				if p.In == "query" {
					names = append(names, p.Name)
				}
			}
			out[strings.ToUpper(method)+" "+path] = names
		}
	}
	return out
})

// knownQuery refuses, by name, a query parameter an /api route does not declare, as an
// unknown body field is refused, instead of ignoring it (?tag=vip listing every contact), and
// one given twice (no parameter is a list). The OpenAPI document is the list, so what is
// accepted is what the contract says.
func knownQuery(next runtime.HandlerFunc) runtime.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request, params map[string]string) {
		if r.URL.RawQuery == "" {
			next(w, r, params)
			return
		}
		p, ok := runtime.HTTPPattern(r.Context())
		known, documented := documentedQueries()[r.Method+" "+strings.ReplaceAll(p.String(), "=*}", "}")]
		if !ok || !documented {
			next(w, r, params)
			return
		}
		q := r.URL.Query()
		keys := make([]string, 0, len(q))
		for k := range q {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		given := map[string]int{} // values per parameter, either spelling
		for k, vs := range q {
			given[camelCase(k)] += len(vs)
		}
		for _, k := range keys {
			problem, msg := "", ""
			switch {
			case !slices.Contains(known, camelCase(k)):
				problem, msg = "unknown query parameter", "unknown query parameter "+k
			case given[camelCase(k)] > 1:
				problem, msg = "must be given once", "query parameter "+k+" given more than once"
			default:
				continue
			}
			writeError(w, r, apiError{Status: http.StatusBadRequest, Code: apierr.ReasonValidation, Message: msg, Fields: map[string]string{k: problem}})
			return
		}
		next(w, r, params)
	}
}

// camelCase is the documented (JSON) name of a parameter also spelled as its proto field
// (include_total), which the query parser accepts too.
func camelCase(s string) string {
	if !strings.Contains(s, "_") {
		return s
	}
	parts := strings.Split(s, "_")
	for i := 1; i < len(parts); i++ {
		if parts[i] != "" {
			parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
		}
	}
	return strings.Join(parts, "")
}
