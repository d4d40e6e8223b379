// Package openapi holds the gateway's OpenAPI 3 document (openapi.json), generated at `make
// generate` by ./gen from the protos, the HTTP rules and overlay.yaml; the gateway serves it
// at /openapi.json and the e2e harness validates every response against it.
package openapi

import _ "embed"

// Spec is the OpenAPI 3 document of the gateway's whole HTTP surface.
//
//go:embed openapi.json
var Spec []byte
