//! Errors as JSON, and the extractors that turn axum's rejections into
//! them: path and query parsing, JSON request bodies with the size limit.

use std::any::Any;

use axum::body::Body;
use axum::body::HttpBody;
use axum::extract::{FromRequest, FromRequestParts, Path, Query, Request};
use axum::http::header::{ALLOW, CONTENT_ENCODING, CONTENT_LENGTH, CONTENT_TYPE, RETRY_AFTER};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use bytes::Bytes;
use http_body_util::{BodyExt, LengthLimitError, Limited};
use serde::de::DeserializeOwned;
use serde::Deserialize;

use podium_core::error::{ApiError, Code};
use podium_core::memory::{self, Reservation};

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

/// The body of every HTTP error: `{"error": {"code", "message"}}`.
pub(crate) fn error_json(e: &ApiError) -> serde_json::Value {
    serde_json::json!({
        "error": { "code": e.code.as_str(), "message": e.message }
    })
}

/// [`error_json`] with the code's status.
/// A refusal that says when to try again carries it as `Retry-After`.
pub(crate) fn error_response(e: &ApiError) -> Response {
    let status = StatusCode::from_u16(e.code.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut r = (status, Json(error_json(e))).into_response();
    if let Some(secs) = e.retry_after_secs {
        r.headers_mut().insert(RETRY_AFTER, secs.into());
    }
    r
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
        414 => Code::UriTooLong,
        415 => Code::UnsupportedMediaType,
        431 => Code::HeadersTooLarge,
        400 | 411 | 422 => Code::MalformedRequest,
        503 => Code::StorageUnavailable,
        s if s < 500 => Code::InvalidArgument,
        _ => Code::Internal,
    }
}

/// Rewrites any error response that is not already our JSON error (axum's
/// plain-text rejections, its 405 answer) into one, keeping its status and
/// `Allow`.
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
    *r.status_mut() = status;
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
            Err(rej) => Err(ApiError::bad(query_message(
                parts.uri.query().unwrap_or_default(),
                &rej.body_text(),
            ))
            .into()),
        }
    }
}

/// A query string's rejection in podium's words. axum's text is
/// `Failed to deserialize query string: NAME: WHY`, WHY being serde's or
/// the standard library's parse error.
fn query_message(query: &str, text: &str) -> String {
    let detail = text
        .strip_prefix("Failed to deserialize query string: ")
        .unwrap_or(text);
    let ticked = |s: &str| s.split('`').nth(1).map(str::to_string);
    // serde's own complaints may come after the parameter's path.
    let after = |what: &str| detail.find(what).map(|i| &detail[i + what.len()..]);
    if let Some(rest) = after("unknown field ") {
        let name = ticked(rest).unwrap_or_default();
        let expected: Vec<&str> = rest
            .split_once("expected ")
            .map(|(_, e)| e.split('`').skip(1).step_by(2).collect())
            .unwrap_or_default();
        return format!(
            "unknown query parameter {name:?}; expected {}",
            expected.join(", ")
        );
    }
    if let Some(rest) = after("missing field ") {
        return format!(
            "the query parameter {} is required",
            ticked(rest).unwrap_or_default()
        );
    }
    if let Some(rest) = after("duplicate field ") {
        return format!(
            "the query parameter {} is given twice",
            ticked(rest).unwrap_or_default()
        );
    }
    let Some((name, why)) = detail.split_once(": ") else {
        return format!("invalid query string: {detail}");
    };
    let value = query_value(query, name).unwrap_or_default();
    if why.contains("integer") || why.contains("digit") || why.contains("fit in target type") {
        format!("{name} must be a non-negative integer below 2^64, got {value:?}")
    } else if why.contains("float") {
        format!("{name} must be a number, got {value:?}")
    } else {
        format!("{name}: {why}")
    }
}

/// The first value of `name` in a query string, decoded.
fn query_value(query: &str, name: &str) -> Option<String> {
    let decode = |s: &str| {
        percent_encoding::percent_decode_str(&s.replace('+', " "))
            .decode_utf8_lossy()
            .into_owned()
    };
    query.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        (decode(k) == name).then(|| decode(v))
    })
}

/// A request body in an encoding other than identity: 415. The body
/// would otherwise be read as JSON as it is, compressed bytes and all.
pub(crate) fn encoding_refusal(req: &axum::extract::Request) -> Option<Response> {
    // Known empty (no body, `Content-Length: 0`, an HTTP/2 stream ended
    // with its headers): there is nothing to decode.
    if req.body().is_end_stream() {
        return None;
    }
    let mut codings = Vec::new();
    for v in req.headers().get_all(CONTENT_ENCODING) {
        let v = String::from_utf8_lossy(v.as_bytes()).into_owned();
        codings.extend(
            v.split(',')
                .map(|c| c.trim().to_ascii_lowercase())
                .filter(|c| !c.is_empty() && c != "identity"),
        );
    }
    if codings.is_empty() {
        return None;
    }
    Some(error_response(&ApiError::new(
        Code::UnsupportedMediaType,
        format!(
            "request bodies are read as sent; Content-Encoding {} is not supported (send the body uncompressed)",
            codings.join(", ")
        ),
    )))
}

#[derive(Deserialize)]
struct BoardParam {
    board: String,
}

#[derive(Deserialize)]
struct MemberParams {
    board: String,
    /// Absent on the routes that take the member in the query.
    member: Option<String>,
}

fn check_board(board: &str) -> Result<(), HttpError> {
    podium_engine::Store::validate_user_name(board).map_err(|e| HttpError(e.into()))
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

/// The `{board}` path parameter and the member: the `{member}` path
/// parameter, or on the collection path (`…/members`, `…/rank`) the
/// `member` query parameter, which carries the ids a path cannot (`.`
/// and `..` are dot segments to every URL parser, percent-encoded too).
pub(crate) struct MemberP(pub String, pub String);

impl<S: Send + Sync> FromRequestParts<S> for MemberP {
    type Rejection = HttpError;
    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, HttpError> {
        let P(p) = P::<MemberParams>::from_request_parts(parts, state).await?;
        check_board(&p.board)?;
        let member = match p.member {
            Some(m) => m,
            None => member_in_query(parts.uri.query().unwrap_or_default())?,
        };
        Ok(MemberP(p.board, member))
    }
}

/// The one `member` parameter of a query string. Decoded strictly: a
/// path's member that is not UTF-8 is refused, and so is a query's (a
/// lossy decoding would name another member). Other parameters are the
/// handler's.
fn member_in_query(query: &str) -> Result<String, HttpError> {
    let decode = |s: &str| {
        let s = s.replace('+', " ");
        percent_encoding::percent_decode_str(&s)
            .decode_utf8()
            .map(|c| c.into_owned())
    };
    let mut found = None;
    for pair in query.split('&') {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        if k != "member" && decode(k).ok().as_deref() != Some("member") {
            continue;
        }
        if found.is_some() {
            return Err(ApiError::bad("the query parameter member is given twice").into());
        }
        found = Some(decode(v).map_err(|_| {
            ApiError::new(
                Code::MalformedRequest,
                "the query parameter member is not UTF-8 once percent-decoded",
            )
        })?);
    }
    match found {
        None => Err(ApiError::bad(
            "the query parameter member (the member id) is required: ?member=ID",
        )
        .into()),
        Some(m) if m.is_empty() => Err(ApiError::bad(format!(
            "the query parameter member is empty: a member id is 1 to {} bytes",
            podium_engine::MAX_MEMBER_BYTES
        ))
        .into()),
        Some(m) => Ok(m),
    }
}

/// The media type of a request, lowercased, without parameters.
pub(crate) fn media_type(headers: &HeaderMap) -> Option<String> {
    let v = headers.get(CONTENT_TYPE)?.to_str().ok()?;
    Some(v.split(';').next()?.trim().to_ascii_lowercase())
}

/// A JSON body must say so (`application/json`, or a `+json` type): the
/// types a web page may send to another site without its consent (text,
/// forms) are refused, so a page cannot make a server without API keys
/// write. An empty body needs no type.
fn check_json_type(headers: &HeaderMap, empty: bool) -> Result<(), ApiError> {
    match media_type(headers) {
        None if empty => Ok(()),
        Some(m) if m == "application/json" || m.ends_with("+json") => Ok(()),
        m => Err(unsupported_type(
            m.as_deref(),
            "a JSON body (Content-Type: application/json)",
        )),
    }
}

/// The refusal of a body of media type `got` (`None`: none given) where
/// `expected` is taken.
pub(crate) fn unsupported_type(got: Option<&str>, expected: &str) -> ApiError {
    ApiError::new(
        Code::UnsupportedMediaType,
        format!(
            "expected {expected}, got {}",
            got.map_or("no Content-Type".to_string(), |m| format!(
                "Content-Type {m}"
            ))
        ),
    )
}

fn too_large(limit: usize) -> ApiError {
    ApiError::new(
        Code::PayloadTooLarge,
        format!("request body is larger than {limit} bytes"),
    )
}

/// How many bytes of memory a JSON body of n bytes may take once read and
/// decoded (the body, its parsed values, the typed request): reserved
/// against the memory budget before the body is read.
pub(crate) const DECODED_PER_BODY_BYTE: usize = 16;

/// The whole request body, at most `limit` bytes, within `time` (`None`:
/// no limit), with memory for it and its decoding reserved against the
/// budget (held by the returned [`Reservation`] until the request is
/// answered); a body that does not fit is refused with `out_of_memory`
/// before it is read.
pub(crate) async fn read_body(
    headers: &HeaderMap,
    body: Body,
    limit: usize,
    time: Option<std::time::Duration>,
) -> HttpResult<(Bytes, Reservation)> {
    if media_type(headers).is_some() {
        check_json_type(headers, false)?;
    }
    let declared = headers
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(too_large(limit).into());
    }
    // Unknown length: the most it may be.
    let expect = declared.map_or(limit, |n| n as usize);
    let reserved = memory::reserve(expect.saturating_mul(DECODED_PER_BODY_BYTE))?;
    let mut read = std::pin::pin!(Limited::new(body, limit).collect());
    // A small body is usually in already: the timer is armed only when
    // the body must be waited for.
    let first = std::future::poll_fn(|cx| {
        std::task::Poll::Ready(std::future::Future::poll(read.as_mut(), cx))
    })
    .await;
    let read = match (first, time) {
        (std::task::Poll::Ready(r), _) => r,
        (std::task::Poll::Pending, Some(t)) => match tokio::time::timeout(t, read).await {
            Ok(r) => r,
            Err(_) => {
                return Err(ApiError::new(
                    Code::RequestTimeout,
                    format!(
                        "the request body did not arrive within {} s (http_body_timeout)",
                        t.as_secs()
                    ),
                )
                .into())
            }
        },
        (std::task::Poll::Pending, None) => read.await,
    };
    match read {
        Ok(c) => {
            let body = c.to_bytes();
            check_json_type(headers, body.is_empty())?;
            Ok((body, reserved))
        }
        Err(e) if e.downcast_ref::<LengthLimitError>().is_some() => Err(too_large(limit).into()),
        Err(e) => Err(ApiError::new(
            Code::MalformedRequest,
            format!("could not read the request body: {e}"),
        )
        .into()),
    }
}

/// A request's JSON body, read whole within the server's body limit (see
/// [`read_body`]): the last extractor of a handler that takes one, so path
/// errors come first.
pub(crate) struct JsonBody(pub Bytes, pub Reservation);

impl FromRequest<super::St> for JsonBody {
    type Rejection = HttpError;
    async fn from_request(req: Request, st: &super::St) -> Result<Self, HttpError> {
        let (parts, body) = req.into_parts();
        let (bytes, reserved) = read_body(
            &parts.headers,
            body,
            st.cfg.max_body_bytes,
            st.cfg.body_timeout,
        )
        .await?;
        Ok(JsonBody(bytes, reserved))
    }
}

/// Parses a JSON object body into `T` (strictly: see
/// [`podium_core::json`]); any decoding error is `malformed_request`, a
/// `score` out of range `invalid_score`. Anything but an object is
/// refused first: serde would read a struct from an array, by position.
pub(crate) fn parse_json<T: DeserializeOwned>(bytes: &[u8]) -> HttpResult<T> {
    check_not_empty(bytes)?;
    if bytes.iter().find(|b| !b.is_ascii_whitespace()) != Some(&b'{') {
        return Err(ApiError::new(
            Code::MalformedRequest,
            "malformed JSON body: expected a JSON object",
        )
        .into());
    }
    podium_core::json::parse(bytes, "malformed JSON body").map_err(HttpError)
}

/// A JSON body as a [`serde_json::Value`], checked as [`parse_json`] checks
/// it, without going through a `T`.
pub(crate) fn parse_json_value(bytes: &[u8]) -> HttpResult<serde_json::Value> {
    check_not_empty(bytes)?;
    podium_core::json::value(bytes, "malformed JSON body").map_err(HttpError)
}

fn check_not_empty(bytes: &[u8]) -> HttpResult<()> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::new(Code::MalformedRequest, "the request body is empty").into());
    }
    Ok(())
}
