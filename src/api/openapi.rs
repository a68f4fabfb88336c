//! The HTTP API's OpenAPI 3.1 description, derived from the handlers'
//! `#[utoipa::path]` attributes and the body types they answer with, so that
//! it changes with the code. Served at `GET /openapi.json`; `tests/openapi.rs`
//! keeps `docs/openapi.json` equal to it and runs schemathesis against it.

use axum::body::Bytes;
use utoipa::openapi::security::{HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

use super::http;
use super::schema::{EvaluateRequest, InlineEvaluator};

#[derive(OpenApi)]
#[openapi(
    info(
        title = "toolscore",
        version = env!("CARGO_PKG_VERSION"),
        description = "Scores how AI agents use their tools, live, from their OpenTelemetry traces. \
            Every token-protected operation answers 401 without a valid bearer token and 403 \
            with one that lacks the scope; tokens are checked only when `api.http.auth.enabled`.",
        license(name = "Apache-2.0", identifier = "Apache-2.0"),
    ),
    paths(
        http::get_scores,
        http::get_trace,
        http::list_traces,
        http::list_evaluators,
        http::list_eval_sets,
        http::evaluate,
        super::sse::watch,
        http::healthz,
        http::readyz,
        http::metrics,
        http::openapi_json,
    ),
    components(schemas(http::ErrorBody, EvaluateRequest, InlineEvaluator)),
    modifiers(&BearerToken),
    tags(
        (name = "results", description = "Scores by trace, and listings"),
        (name = "evaluation", description = "Synchronous evaluation"),
        (name = "configuration", description = "What is loaded"),
        (name = "operations", description = "Health, metrics and this document"),
    ),
)]
struct ApiDoc;

/// The document as served: pretty JSON with a final newline, the same
/// bytes for the same code (paths, fields and maps keep their order).
pub fn document() -> Bytes {
    match ApiDoc::openapi().to_pretty_json() {
        Ok(mut text) => {
            text.push('\n');
            Bytes::from(text)
        }
        // Serialising plain structs and maps does not fail; an empty object
        // would fail the document's test rather than the service.
        Err(e) => {
            tracing::error!(error = %e, "the OpenAPI document does not serialise");
            Bytes::from_static(b"{}\n")
        }
    }
}

/// The bearer token scheme with its scopes (`src/security.rs`).
struct BearerToken;

impl Modify for BearerToken {
    fn modify(&self, doc: &mut utoipa::openapi::OpenApi) {
        let scheme = HttpBuilder::new()
            .scheme(HttpAuthScheme::Bearer)
            .description(Some(
                "A token from `auth.tokens` with the operation's scope (`read`, `evaluate` \
                 or `metrics`).",
            ))
            .build();
        doc.components
            .get_or_insert_with(Default::default)
            .add_security_scheme("bearer", SecurityScheme::Http(scheme));
    }
}
