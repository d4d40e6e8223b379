// Package apidocs holds the gateway's browsable API reference, served at /docs: a page
// (index.html) that renders the OpenAPI document at /openapi.json with Redoc's standalone
// bundle. The bundle is vendored under redoc/ by vendor.sh at `make generate` (a pinned
// version from the npm registry, checked against pinned hashes) and embedded here, so the
// page loads nothing from outside the gateway.
package apidocs

import _ "embed"

// BundleName is the bundle's file name; the page loads it from /docs/BundleName.
const BundleName = "redoc.standalone.js"

// Page is the HTML of /docs.
//
//go:embed index.html
var Page []byte

// Bundle is Redoc's standalone bundle (redoc/LICENSE, notices in
// redoc/redoc.standalone.js.LICENSE.txt).
//
//go:embed redoc/redoc.standalone.js
var Bundle []byte
