// The /docs page: Swagger UI (vendored in static/swagger/) on this server's OpenAPI document, whose
// URL the page gives in data-openapi. The Content Security Policy allows this file and Swagger UI,
// nothing inline and nothing from another origin (no validator badge either).
"use strict";

window.addEventListener("DOMContentLoaded", () => {
  const root = document.getElementById("swagger-ui");
  window.ui = window.SwaggerUIBundle({
    url: root.dataset.openapi,
    dom_id: "#swagger-ui",
    layout: "BaseLayout",
    deepLinking: true,
    showExtensions: true,
    showCommonExtensions: true,
    validatorUrl: null,
    presets: [window.SwaggerUIBundle.presets.apis],
  });
});
