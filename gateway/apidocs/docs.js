// Starts the vendored Swagger UI on the gateway's OpenAPI document. A file of its own rather
// than an inline script, so the page's Content-Security-Policy allows scripts from the gateway
// only.
window.ui = SwaggerUIBundle({
  url: "/openapi.json",
  dom_id: "#swagger-ui",
  deepLinking: true,
  // No badge from the public validator: the page loads nothing from outside the gateway.
  validatorUrl: null,
  // The bare layout: no top bar with a field to load another document.
  presets: [SwaggerUIBundle.presets.apis],
  layout: "BaseLayout",
});
