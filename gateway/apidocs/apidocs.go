// Package apidocs holds the gateway's browsable API reference, served at /docs: a page
// (index.html) on which Swagger UI renders the OpenAPI document at /openapi.json. Swagger UI's
// bundle and stylesheet are vendored under swagger-ui/ by vendor.sh at `make generate` (a
// pinned version from the npm registry, checked against pinned hashes) and embedded here with
// docs.js, which starts it, so the page loads nothing from outside the gateway.
package apidocs

import (
	"embed"
	"fmt"
)

// Page is the HTML of /docs.
//
//go:embed index.html
var Page []byte

//go:embed docs.js swagger-ui/swagger-ui-bundle.js swagger-ui/swagger-ui.css
var files embed.FS

// Asset is a file the page loads.
type Asset struct {
	ContentType string
	Body        []byte
}

// Assets are the files the page loads, by the name it loads each under (/docs/<name>).
// Swagger UI's license and notices are in swagger-ui/ (LICENSE, NOTICE,
// swagger-ui-bundle.js.LICENSE.txt).
var Assets = map[string]Asset{
	"docs.js":              {"text/javascript; charset=utf-8", mustRead("docs.js")},
	"swagger-ui-bundle.js": {"text/javascript; charset=utf-8", mustRead("swagger-ui/swagger-ui-bundle.js")},
	"swagger-ui.css":       {"text/css; charset=utf-8", mustRead("swagger-ui/swagger-ui.css")},
}

func mustRead(name string) []byte {
	b, err := files.ReadFile(name)
	if err != nil {
		panic(fmt.Sprintf("apidocs: %v", err)) // the embed directive above names every file
	}
	return b
}
