//! The UI's script and stylesheet, embedded in the binary so the UI works
//! offline and needs no build step. Pages link them with a hash of their
//! content in the query (`?v=`), so a browser may keep them for a year and
//! still never runs a stale script after an upgrade.

use axum::extract::Path;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

/// One embedded file.
pub struct Asset {
    pub name: &'static str,
    pub content_type: &'static str,
    pub body: &'static str,
}

pub const JS: Asset = Asset {
    name: "ui.js",
    content_type: "text/javascript; charset=utf-8",
    body: include_str!("assets/ui.js"),
};

pub const CSS: Asset = Asset {
    name: "ui.css",
    content_type: "text/css; charset=utf-8",
    body: include_str!("assets/ui.css"),
};

impl Asset {
    /// The link a page uses: the path plus a content hash, which changes
    /// whenever the file does.
    pub fn url(&self) -> String {
        format!(
            "/ui/assets/{}?v={:08x}",
            self.name,
            crc32fast::hash(self.body.as_bytes())
        )
    }
}

/// `/ui/assets/{name}`: the file with its type and a long cache lifetime
/// (the link's `?v=` changes with the content); 404 for any other name.
pub async fn handler(Path(name): Path<String>) -> Response {
    let Some(asset) = [JS, CSS].into_iter().find(|a| a.name == name) else {
        return (
            StatusCode::NOT_FOUND,
            [(
                header::X_CONTENT_TYPE_OPTIONS,
                HeaderValue::from_static("nosniff"),
            )],
            "no such asset",
        )
            .into_response();
    };
    let mut resp = asset.body.into_response();
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(asset.content_type),
    );
    h.insert(
        header::CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=31536000, immutable"),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    resp
}
