//! One handler per route: parse the request into its typed operation
//! (`podium_core::ops`), run it, encode the answer.

use std::sync::OnceLock;

use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::Json;
use bytes::Bytes;
use serde::{Deserialize, Deserializer};
use serde_json::{json, Value};

use super::error::{
    parse_json, parse_json_value, BoardP, HttpError, HttpResult, JsonBody, MemberP, Q,
};
use super::St;
use podium_core::api::*;
use podium_core::backend::RangeBounds;
use podium_core::error::{ApiError, Code};
use podium_core::ops::range::{self, RangeBy};
use podium_core::ops::{self, Operation};

// ------------------------------------------------------------- parsing

/// A query flag: `true`/`1`/`yes`/`on` or empty (`?with_data`) is true,
/// `false`/`0`/`no`/`off` false.
fn flag<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    let s = String::deserialize(d)?;
    match s.trim().to_ascii_lowercase().as_str() {
        "" | "true" | "1" | "yes" | "on" => Ok(true),
        "false" | "0" | "no" | "off" => Ok(false),
        _ => Err(serde::de::Error::custom(format!(
            "expected true or false, got {s:?}"
        ))),
    }
}

/// One submission from a JSON value. A bad `score` is `invalid_score`
/// (NaN, `"abc"`), any other shape error `malformed_request`. `drop_rank`
/// accepts `export`'s lines, which carry a `rank`.
pub(crate) fn submit_in(v: Value, drop_rank: bool) -> Result<SubmitIn, ApiError> {
    let Value::Object(mut map) = v else {
        return Err(ApiError::new(
            Code::MalformedRequest,
            "an entry must be a JSON object",
        ));
    };
    if drop_rank {
        map.remove("rank");
    }
    if let Some(s) = map.get("score") {
        check_entry_score(s.as_str(), || {
            Score::deserialize(s).map_err(|e| e.to_string())
        })?;
    }
    serde_json::from_value(Value::Object(map))
        .map_err(|e| ApiError::new(Code::MalformedRequest, e.to_string()))
}

fn bounds(min: Option<&str>, max: Option<&str>) -> Result<RangeBounds, ApiError> {
    let (min, min_exclusive) = min.map(|t| range::bound("min", t)).transpose()?.unzip();
    let (max, max_exclusive) = max.map(|t| range::bound("max", t)).transpose()?.unzip();
    Ok(RangeBounds {
        min,
        max,
        min_exclusive: min_exclusive.unwrap_or(false),
        max_exclusive: max_exclusive.unwrap_or(false),
    })
}

// ---------------------------------------------------------------- misc

pub(crate) async fn not_found(method: Method, uri: Uri) -> HttpError {
    ApiError::new(
        Code::NotFound,
        format!("no route for {method} {}", uri.path()),
    )
    .into()
}

/// 200 with the backend's kind while its storage answers; 503
/// `storage_unavailable` (its message says why) while it does not, e.g.
/// when Redis is unreachable or the embedded log cannot write, so a load
/// balancer can take the node out.
pub(crate) async fn healthz(State(st): State<St>) -> HttpResult<Json<Value>> {
    st.be.ping().await?;
    Ok(Json(json!({
        "status": "ok",
        "backend": st.be.kind(),
        "version": env!("CARGO_PKG_VERSION"),
        "commit": crate::COMMIT,
    })))
}

/// 200 once the server serves: its storage is open (recovered, or
/// connected to Redis) and answers, and it is not shutting down; 503
/// `not_ready` or `storage_unavailable` otherwise (while the storage
/// opens, the listener's starting answers give it: [`super::Routing`]).
pub(crate) async fn readyz(State(st): State<St>) -> HttpResult<Json<Value>> {
    if st.cfg.stop.as_ref().is_some_and(|s| *s.borrow()) {
        return Err(ApiError::new(
            Code::NotReady,
            "podium is shutting down: it finishes the requests in flight",
        )
        .into());
    }
    st.be.ping().await?;
    Ok(Json(json!({"status": "ready"})))
}

pub(crate) async fn metrics(State(st): State<St>) -> Response {
    let boards = st.update_gauges().await;
    let mut text = match &st.metrics {
        Some(h) => {
            h.run_upkeep();
            h.render()
        }
        None => "# the metrics recorder is not installed\n".to_string(),
    };
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&boards);
    crate::callstats::render(&mut text);
    crate::process::render(&mut text);
    (
        [(CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")],
        text,
    )
        .into_response()
}

/// The OpenAPI document of this server: with or without API keys.
pub(crate) async fn openapi(State(st): State<St>) -> Response {
    static DOCS: [OnceLock<String>; 2] = [OnceLock::new(), OnceLock::new()];
    let keys = !st.cfg.api_keys.is_empty();
    let doc = DOCS[keys as usize].get_or_init(|| super::openapi::document(keys).to_string());
    ([(CONTENT_TYPE, "application/json")], doc.as_str()).into_response()
}

/// `GET /v1/key`: whether keys are configured and the scope of the one
/// presented (the auth layer let the request through, so it is valid);
/// with no keys configured every request may do everything.
pub(crate) async fn key_info(State(st): State<St>, headers: HeaderMap) -> Json<Value> {
    if st.cfg.api_keys.is_empty() {
        return Json(json!({"keys": false, "scope": "admin"}));
    }
    let scope = super::bearer(&headers)
        .and_then(|k| st.cfg.position_of(k))
        .map(|p| st.cfg.api_keys[p].scope.as_str());
    Json(json!({"keys": true, "scope": scope}))
}

// -------------------------------------------------------------- boards

pub(crate) async fn boards(State(st): State<St>) -> HttpResult<Json<BoardsOut>> {
    Ok(Json(ops::ListBoards.run(&*st.be).await?))
}

pub(crate) async fn board_put(
    State(st): State<St>,
    BoardP(board): BoardP,
    JsonBody(bytes, _reserved): JsonBody,
) -> HttpResult<Response> {
    let config: Value = if bytes.iter().all(u8::is_ascii_whitespace) {
        json!({})
    } else {
        parse_json_value(&bytes)?
    };
    let out = ops::PutBoard::from_body(board, config)?
        .run(&*st.be)
        .await?;
    let status = if out.created == Some(true) {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok((status, Json(out)).into_response())
}

/// `PATCH`: the fields the body names change, the others are kept (a
/// JSON merge patch).
pub(crate) async fn board_patch(
    State(st): State<St>,
    BoardP(board): BoardP,
    JsonBody(bytes, _reserved): JsonBody,
) -> HttpResult<Json<BoardOut>> {
    let patch = parse_json_value(&bytes)?;
    let op = ops::PatchBoard::from_body(board, patch)?;
    Ok(Json(op.run(&*st.be).await?))
}

pub(crate) async fn board_info(
    State(st): State<St>,
    BoardP(board): BoardP,
) -> HttpResult<Json<BoardOut>> {
    Ok(Json(ops::BoardInfo { board }.run(&*st.be).await?))
}

pub(crate) async fn resort_status(
    State(st): State<St>,
    BoardP(board): BoardP,
) -> HttpResult<Json<ResortOut>> {
    Ok(Json(ops::ResortStatus { board }.run(&*st.be).await?))
}

pub(crate) async fn board_delete(
    State(st): State<St>,
    BoardP(board): BoardP,
) -> HttpResult<Json<Value>> {
    let op = ops::DeleteBoard { board };
    op.run(&*st.be).await?;
    Ok(Json(json!({"board": op.board, "deleted": true})))
}

pub(crate) async fn reset(
    State(st): State<St>,
    BoardP(board): BoardP,
) -> HttpResult<Json<ResetOut>> {
    Ok(Json(ops::Reset { board }.run(&*st.be).await?))
}

async fn combine(
    st: St,
    board: String,
    bytes: Bytes,
    intersect: bool,
) -> HttpResult<Json<CombineOut>> {
    let req: CombineIn = parse_json(&bytes)?;
    let op = ops::Combine {
        dest: board,
        req,
        intersect,
    };
    Ok(Json(op.run(&*st.be).await?))
}

pub(crate) async fn merge(
    State(st): State<St>,
    BoardP(board): BoardP,
    JsonBody(bytes, _reserved): JsonBody,
) -> HttpResult<Json<CombineOut>> {
    combine(st, board, bytes, false).await
}

pub(crate) async fn intersect(
    State(st): State<St>,
    BoardP(board): BoardP,
    JsonBody(bytes, _reserved): JsonBody,
) -> HttpResult<Json<CombineOut>> {
    combine(st, board, bytes, true).await
}

// -------------------------------------------------------------- writes

pub(crate) async fn submit(
    State(st): State<St>,
    BoardP(board): BoardP,
    JsonBody(bytes, _reserved): JsonBody,
) -> HttpResult<Response> {
    match parse_json_value(&bytes)? {
        Value::Array(items) => {
            let entries = ops::submit::batch(items, |v| submit_in(v, false))?;
            let op = ops::SubmitMany { board, entries };
            let results = op.run(&*st.be).await?;
            Ok(Json(json!({"board": op.board, "results": results})).into_response())
        }
        v @ Value::Object(_) => {
            let entry = submit_in(v, false)?;
            let op = ops::Submit { board, entry };
            Ok(Json(op.run(&*st.be).await?).into_response())
        }
        _ => Err(ApiError::new(
            Code::MalformedRequest,
            "expected an entry object or an array of entries",
        )
        .into()),
    }
}

pub(crate) async fn set_data(
    State(st): State<St>,
    MemberP(board, member): MemberP,
    JsonBody(bytes, _reserved): JsonBody,
) -> HttpResult<Json<SetDataOut>> {
    let req: SetDataIn = parse_json(&bytes)?;
    let op = ops::SetData {
        board,
        member,
        name: req.name,
        data: req.data,
    };
    Ok(Json(op.run(&*st.be).await?))
}

pub(crate) async fn remove_member(
    State(st): State<St>,
    MemberP(board, member): MemberP,
) -> HttpResult<Json<RemovedOut>> {
    let op = ops::Remove {
        board,
        members: vec![member],
    };
    let out = op.run(&*st.be).await?;
    if out.removed == 0 {
        return Err(ApiError::no_member(&op.board, &op.members[0]).into());
    }
    Ok(Json(out))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct MembersIn {
    members: Vec<String>,
    #[serde(default)]
    with_data: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RemoveIn {
    members: Vec<String>,
}

pub(crate) async fn remove(
    State(st): State<St>,
    BoardP(board): BoardP,
    JsonBody(bytes, _reserved): JsonBody,
) -> HttpResult<Json<RemovedOut>> {
    let req: RemoveIn = parse_json(&bytes)?;
    let op = ops::Remove {
        board,
        members: req.members,
    };
    Ok(Json(op.run(&*st.be).await?))
}

// --------------------------------------------------------------- reads

#[derive(Deserialize)]
pub(crate) struct PageQ {
    page: Option<u64>,
    page_size: Option<u64>,
    #[serde(default, deserialize_with = "flag")]
    with_data: bool,
}

pub(crate) async fn top(
    State(st): State<St>,
    BoardP(board): BoardP,
    Q(q): Q<PageQ>,
) -> HttpResult<Json<TopOut>> {
    let op = ops::Top {
        board,
        page: q.page,
        page_size: q.page_size,
        with_data: q.with_data,
    };
    Ok(Json(op.run(&*st.be).await?))
}

pub(crate) async fn entry(
    State(st): State<St>,
    MemberP(board, member): MemberP,
    Q(q): Q<PageQ>,
) -> HttpResult<Json<EntryInfoOut>> {
    let op = ops::GetEntry {
        board,
        member,
        page_size: q.page_size,
    };
    Ok(Json(op.run(&*st.be).await?))
}

pub(crate) async fn around(
    State(st): State<St>,
    MemberP(board, member): MemberP,
    Q(q): Q<PageQ>,
) -> HttpResult<Json<AroundOut>> {
    let op = ops::Around {
        board,
        member,
        page_size: q.page_size,
        with_data: q.with_data,
    };
    Ok(Json(op.run(&*st.be).await?))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SearchQ {
    q: String,
    limit: Option<u64>,
    offset: Option<u64>,
    #[serde(default, deserialize_with = "flag")]
    with_data: bool,
}

pub(crate) async fn search(
    State(st): State<St>,
    BoardP(board): BoardP,
    Q(q): Q<SearchQ>,
) -> HttpResult<Response> {
    let op = ops::Search {
        board,
        query: q.q,
        limit: q.limit,
        offset: q.offset,
        with_data: q.with_data,
    };
    let Some(local) = st.be.in_place() else {
        return Ok(Json(op.run(&*st.be).await?).into_response());
    };
    // An indexed board's search is a read like `top`, answered here and
    // encoded straight from the board into the body under its read lock.
    let mut body = Vec::new();
    let mut written = Ok(());
    let answered = local.search_visit(&op, &mut |head, entries| {
        written = write_search_json(&mut body, &op.board, &op.query, head, entries, op.with_data);
    })?;
    if answered {
        written.map_err(|e| ApiError::new(Code::Internal, e.to_string()))?;
        return Ok(json_body(body));
    }
    // The first search of a board builds its index: off the async workers.
    let local = local.clone();
    tokio::task::spawn_blocking(move || {
        let page = local.search_page(&op)?;
        search_response(&op, &page)
    })
    .await
    .map_err(|e| ApiError::new(Code::Internal, e.to_string()))?
}

fn json_body(body: Vec<u8>) -> Response {
    (
        [(CONTENT_TYPE, HeaderValue::from_static("application/json"))],
        body,
    )
        .into_response()
}

/// A search page (the first of a board, which built its index) encoded
/// from the engine's owned page: the same JSON as `SearchOut`'s and as
/// [`write_search_json`]'s.
fn search_response(
    op: &ops::Search,
    page: &podium_engine::search::SearchPage,
) -> HttpResult<Response> {
    let json = SearchJson {
        board: &op.board,
        ranking: ranking_str(page.ranking),
        query: &op.query,
        total: page.total,
        offset: page.offset,
        limit: page.limit,
        entries: EntriesJson {
            entries: &page.entries,
            keys: &page.keys,
            with_data: op.with_data,
        },
    };
    let mut body = Vec::with_capacity(256 + 128 * page.entries.len());
    serde_json::to_writer(&mut body, &json)
        .map_err(|e| ApiError::new(Code::Internal, e.to_string()))?;
    Ok(json_body(body))
}

pub(crate) async fn rank(
    State(st): State<St>,
    MemberP(board, member): MemberP,
) -> HttpResult<Json<RankOut>> {
    Ok(Json(ops::Rank { board, member }.run(&*st.be).await?))
}

pub(crate) async fn percentile(
    State(st): State<St>,
    MemberP(board, member): MemberP,
) -> HttpResult<Json<PercentileOut>> {
    Ok(Json(ops::Percentile { board, member }.run(&*st.be).await?))
}

#[derive(Deserialize)]
pub(crate) struct PercentileQ {
    p: Option<f64>,
}

pub(crate) async fn score_at_percentile(
    State(st): State<St>,
    BoardP(board): BoardP,
    Q(q): Q<PercentileQ>,
) -> HttpResult<Json<ScoreAtOut>> {
    let p =
        q.p.ok_or_else(|| ApiError::bad("p (a percentile, 0 to 100) is required"))?;
    Ok(Json(
        ops::ScoreAtPercentile { board, p }.run(&*st.be).await?,
    ))
}

/// `GET …/range/rank`: `count` places from rank `start`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RankRangeQ {
    start: u64,
    count: Option<u64>,
    from: Option<String>,
    #[serde(default, deserialize_with = "flag")]
    with_data: bool,
}

/// `GET …/range/score`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ScoreRangeQ {
    min: Option<String>,
    max: Option<String>,
    from: Option<String>,
    offset: Option<u64>,
    limit: Option<u64>,
    #[serde(default, deserialize_with = "flag")]
    with_data: bool,
}

/// `DELETE …/range/rank`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RankRemoveQ {
    start: u64,
    count: u64,
}

/// `DELETE …/range/score`: both bounds, so that a removal says what it
/// removes.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ScoreRemoveQ {
    min: String,
    max: String,
}

/// The last rank of `count` places from `start` (a count of 0 is
/// refused by the operation's own check as a stop before the start).
fn stop_of(start: u64, count: u64) -> u64 {
    match count {
        0 => start.saturating_sub(1),
        n => start.saturating_add(n - 1),
    }
}

pub(crate) async fn range_by_rank(
    State(st): State<St>,
    BoardP(board): BoardP,
    Q(q): Q<RankRangeQ>,
) -> HttpResult<Json<RangeOut>> {
    let op = ops::RangeByRank {
        board,
        start: q.start,
        stop: stop_of(q.start, q.count.unwrap_or(ops::DEFAULT_PAGE_SIZE)),
        from_worst: range::from_worst(q.from.as_deref())?,
        with_data: q.with_data,
    };
    Ok(Json(op.run(&*st.be).await?))
}

pub(crate) async fn range_by_score(
    State(st): State<St>,
    BoardP(board): BoardP,
    Q(q): Q<ScoreRangeQ>,
) -> HttpResult<Json<RangeOut>> {
    let op = ops::RangeByScore {
        board,
        bounds: bounds(q.min.as_deref(), q.max.as_deref())?,
        from_worst: range::from_worst(q.from.as_deref())?,
        offset: q.offset,
        limit: q.limit,
        with_data: q.with_data,
    };
    Ok(Json(op.run(&*st.be).await?))
}

pub(crate) async fn remove_range_by_rank(
    State(st): State<St>,
    BoardP(board): BoardP,
    Q(q): Q<RankRemoveQ>,
) -> HttpResult<Json<RemovedOut>> {
    let op = ops::RemoveRange {
        board,
        by: RangeBy::Rank {
            start: q.start,
            stop: stop_of(q.start, q.count),
        },
    };
    Ok(Json(op.run(&*st.be).await?))
}

pub(crate) async fn remove_range_by_score(
    State(st): State<St>,
    BoardP(board): BoardP,
    Q(q): Q<ScoreRemoveQ>,
) -> HttpResult<Json<RemovedOut>> {
    let op = ops::RemoveRange {
        board,
        by: RangeBy::Score(bounds(Some(&q.min), Some(&q.max))?),
    };
    Ok(Json(op.run(&*st.be).await?))
}

#[derive(Deserialize)]
pub(crate) struct CountQ {
    min: Option<String>,
    max: Option<String>,
}

pub(crate) async fn count(
    State(st): State<St>,
    BoardP(board): BoardP,
    Q(q): Q<CountQ>,
) -> HttpResult<Json<CountOut>> {
    let bounds = bounds(q.min.as_deref(), q.max.as_deref())?;
    Ok(Json(ops::Count { board, bounds }.run(&*st.be).await?))
}

pub(crate) async fn ranks(
    State(st): State<St>,
    BoardP(board): BoardP,
    JsonBody(bytes, _reserved): JsonBody,
) -> HttpResult<Json<RanksOut>> {
    let req: MembersIn = parse_json(&bytes)?;
    let op = ops::Ranks {
        board,
        members: req.members,
        with_data: req.with_data,
    };
    Ok(Json(op.run(&*st.be).await?))
}
