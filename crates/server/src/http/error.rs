//! Errors as JSON, and the extractors that turn axum's rejections into
//! them: path and query parsing, JSON request bodies with the size limit.

use std::any::Any;

use axum::body::Body;
use axum::extract::{FromRequestParts, Path, Query};
use axum::http::header::{ALLOW, CONTENT_LENGTH, CONTENT_TYPE};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use bytes::Bytes;
use http_body_util::{BodyExt, LengthLimitError, Limited};
use serde::de::DeserializeOwned;
use serde::Deserialize;

use crate::error::{ApiError, Code};

/// An [`ApiError`] as a response.
pub(crate) struct HttpError(pub ApiError);

impl From<ApiError> for HttpError {
    fn from(e: ApiError) -> Self {
        HttpError(e)
    }
}

impl IntoResponse for HttpError {
    fn into_response(self) -> Response {
        error_response(&self.0)
    }
}

pub(crate) type HttpResult<T> = Result<T, HttpError>;

/// `{"error": {"code", "message"}}` with the code's status.
pub(crate) fn error_response(e: &ApiError) -> Response {
    let status = StatusCode::from_u16(e.code.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let body = serde_json::json!({
        "error": { "code": e.code.as_str(), "message": e.message }
    });
    (status, Json(body)).into_response()
}

/// For `CatchPanicLayer`: a panic is a 500 `internal` error.
pub(crate) fn panic_response(err: Box<dyn Any + Send + 'static>) -> Response {
    let what = err
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| err.downcast_ref::<&str>().copied())
        .unwrap_or("unknown panic");
    tracing::error!(panic = what, "request handler panicked");
    error_response(&ApiError::new(Code::Internal, "internal error"))
}

fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"))
}

/// The code an error status from outside the handlers (axum's own
/// rejections and fallbacks) stands for.
fn code_for_status(s: StatusCode) -> Code {
    match s.as_u16() {
        401 => Code::Unauthorized,
        403 => Code::Forbidden,
        404 => Code::NotFound,
        405 => Code::MethodNotAllowed,
        413 => Code::PayloadTooLarge,
        400 | 411 | 415 | 422 => Code::MalformedRequest,
        503 => Code::StorageUnavailable,
        s if s < 500 => Code::InvalidArgument,
        _ => Code::Internal,
    }
}

/// Rewrites any error response that is not already our JSON error (axum's
/// plain-text rejections, its 405 answer) into one, keeping `Allow`.
pub(crate) async fn json_errors(resp: Response) -> Response {
    let status = resp.status();
    if !(status.is_client_error() || status.is_server_error()) || is_json(resp.headers()) {
        return resp;
    }
    let (parts, body) = resp.into_parts();
    let text = match Limited::new(body, 4096).collect().await {
        Ok(c) => String::from_utf8_lossy(&c.to_bytes()).trim().to_string(),
        Err(_) => String::new(),
    };
    let message = if text.is_empty() {
        status.canonical_reason().unwrap_or("error").to_string()
    } else {
        text
    };
    let mut r = error_response(&ApiError::new(code_for_status(status), message));
    for name in [ALLOW, axum::http::header::WWW_AUTHENTICATE] {
        if let Some(v) = parts.headers.get(&name) {
            r.headers_mut().insert(name, v.clone());
        }
    }
    r
}

/// `Path<T>` whose rejection is our JSON error.
pub(crate) struct P<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + Send> FromRequestParts<S> for P<T> {
    type Rejection = HttpError;
    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, HttpError> {
        match Path::<T>::from_request_parts(parts, state).await {
            Ok(Path(t)) => Ok(P(t)),
            Err(rej) => Err(ApiError::new(Code::MalformedRequest, rej.body_text()).into()),
        }
    }
}

/// `Query<T>` whose rejection is our JSON error (`invalid_argument`).
pub(crate) struct Q<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + Send> FromRequestParts<S> for Q<T> {
    type Rejection = HttpError;
    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, HttpError> {
        match Query::<T>::try_from_uri(&parts.uri) {
            Ok(Query(t)) => Ok(Q(t)),
            Err(rej) => Err(ApiError::bad(rej.body_text()).into()),
        }
    }
}

#[derive(Deserialize)]
struct BoardParam {
    board: String,
}

#[derive(Deserialize)]
struct MemberParams {
    board: String,
    member: String,
}

fn check_board(board: &str) -> Result<(), HttpError> {
    podium_engine::Store::validate_name(board).map_err(|e| HttpError(e.into()))
}

/// The `{board}` path parameter, a valid board name.
pub(crate) struct BoardP(pub String);

impl<S: Send + Sync> FromRequestParts<S> for BoardP {
    type Rejection = HttpError;
    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, HttpError> {
        let P(p) = P::<BoardParam>::from_request_parts(parts, state).await?;
        check_board(&p.board)?;
        Ok(BoardP(p.board))
    }
}

/// The `{board}` and `{member}` path parameters.
pub(crate) struct MemberP(pub String, pub String);

impl<S: Send + Sync> FromRequestParts<S> for MemberP {
    type Rejection = HttpError;
    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, HttpError> {
        let P(p) = P::<MemberParams>::from_request_parts(parts, state).await?;
        check_board(&p.board)?;
        Ok(MemberP(p.board, p.member))
    }
}

/// The media type of a request, lowercased, without parameters.
pub(crate) fn media_type(headers: &HeaderMap) -> Option<String> {
    let v = headers.get(CONTENT_TYPE)?.to_str().ok()?;
    Some(v.split(';').next()?.trim().to_ascii_lowercase())
}

/// JSON bodies are accepted without a Content-Type, as JSON, as text, and
/// as form-urlencoded (what `curl -d` sends); anything else is refused.
fn check_json_type(headers: &HeaderMap) -> Result<(), ApiError> {
    match media_type(headers) {
        None => Ok(()),
        Some(m)
            if m == "application/json"
                || m.ends_with("+json")
                || m == "text/plain"
                || m == "application/x-www-form-urlencoded" =>
        {
            Ok(())
        }
        Some(m) => Err(ApiError::new(
            Code::MalformedRequest,
            format!("expected a JSON body (Content-Type: application/json), got {m}"),
        )),
    }
}

fn too_large(limit: usize) -> ApiError {
    ApiError::new(
        Code::PayloadTooLarge,
        format!("request body is larger than {limit} bytes"),
    )
}

/// The whole request body, at most `limit` bytes.
pub(crate) async fn read_body(headers: &HeaderMap, body: Body, limit: usize) -> HttpResult<Bytes> {
    check_json_type(headers)?;
    let declared = headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(too_large(limit).into());
    }
    match Limited::new(body, limit).collect().await {
        Ok(c) => Ok(c.to_bytes()),
        Err(e) if e.downcast_ref::<LengthLimitError>().is_some() => Err(too_large(limit).into()),
        Err(e) => Err(ApiError::new(
            Code::MalformedRequest,
            format!("could not read the request body: {e}"),
        )
        .into()),
    }
}

/// Parses a JSON body into `T`; any decoding error is `malformed_request`.
pub(crate) fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> HttpResult<T> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::new(Code::MalformedRequest, "the request body is empty").into());
    }
    serde_json::from_slice(bytes).map_err(|e| {
        ApiError::new(Code::MalformedRequest, format!("malformed JSON body: {e}")).into()
    })
}
