// Package openapi holds the OpenAPI document generated from the protos and the HTTP rules
// (chorus.swagger.json, written by `make generate`); the gateway serves it at /openapi.json.
package openapi

import _ "embed"

// Spec is the OpenAPI 2.0 document of the REST API.
//
//go:embed chorus.swagger.json
var Spec []byte
