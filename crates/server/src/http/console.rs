//! The web console: the files of `crates/server/console/` (HTML, CSS and
//! JavaScript modules, no build step), compiled into the binary and served
//! at `/console/` and `/console/{file}`, with `/` and `/console` leading
//! there. The files are open to anyone, like any page: the console asks
//! for an API key and sends it with each API request it makes, so what it
//! shows follows the key's scope (docs/console.md).
//!
//! Answers carry a strict Content-Security-Policy (scripts, styles and
//! connections to this origin only, nothing inline, no framing) and an
//! ETag of the file's contents: a browser revalidates (`no-cache`) and
//! gets `304` until a new binary serves new files.

use axum::extract::Path;
use axum::http::header::{
    CACHE_CONTROL, CONTENT_SECURITY_POLICY, CONTENT_TYPE, ETAG, IF_NONE_MATCH, LOCATION,
    REFERRER_POLICY, X_CONTENT_TYPE_OPTIONS,
};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use podium_core::error::{ApiError, Code};

#[derive(rust_embed::Embed)]
#[folder = "console/"]
struct Files;

const CSP: &str = "default-src 'self'; img-src 'self' data:; style-src 'self'; \
                   script-src 'self'; connect-src 'self'; frame-ancestors 'none'; \
                   base-uri 'none'; form-action 'none'";

/// `/` and `/console`: to the console's page (relative links in it need
/// the trailing slash).
pub(crate) async fn to_console() -> Response {
    (
        StatusCode::FOUND,
        [(LOCATION, HeaderValue::from_static("/console/"))],
    )
        .into_response()
}

/// `/console/`: the page.
pub(crate) async fn index(headers: HeaderMap) -> Response {
    file_response("index.html", &headers)
}

/// `/console/{file}`.
pub(crate) async fn file(Path(name): Path<String>, headers: HeaderMap) -> Response {
    file_response(&name, &headers)
}

fn file_response(name: &str, headers: &HeaderMap) -> Response {
    let Some(f) = Files::get(name) else {
        return super::error::error_response(&ApiError::new(
            Code::NotFound,
            format!("the console has no file {name:?}"),
        ));
    };
    let etag = format!("\"{}\"", hex(&f.metadata.sha256_hash()[..16]));
    let common = [
        (CACHE_CONTROL, HeaderValue::from_static("no-cache")),
        (CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP)),
        (X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff")),
        (REFERRER_POLICY, HeaderValue::from_static("no-referrer")),
    ];
    let etag_value = HeaderValue::from_str(&etag).expect("hex is a valid header value");
    let matches = headers
        .get(IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim() == etag || t.trim() == "*"));
    if matches {
        return (StatusCode::NOT_MODIFIED, common, [(ETAG, etag_value)]).into_response();
    }
    let mime = HeaderValue::from_str(f.metadata.mimetype())
        .unwrap_or(HeaderValue::from_static("application/octet-stream"));
    (
        common,
        [(CONTENT_TYPE, mime), (ETAG, etag_value)],
        f.data.into_owned(),
    )
        .into_response()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The console's file names, for tests.
#[cfg(test)]
pub(crate) fn names() -> Vec<String> {
    Files::iter().map(|n| n.into_owned()).collect()
}
