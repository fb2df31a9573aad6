//! The HTTP/JSON frontend (docs/spec.md §4): parses a request, calls one
//! [`Backend`] method, encodes its result. No business logic lives here.
//! Speed paths are methods of the trait with a general default: a search
//! answered in place when the engine offers [`Backend::in_place`], the
//! storage's own gauges, `import` as checked records.
//!
//! Every route is one row of [`ROUTES`]: the router is built from that
//! table, the auth layer reads each route's scope from it, and the OpenAPI
//! document ([`openapi`]) is generated from it, so the three cannot drift
//! apart (a test checks the router answers every row, and that the
//! document lists exactly the rows).
//!
//! Every request but `/healthz`, `/readyz` and `/openapi.json` (the probes) takes a
//! token of its client address's rate limit before anything else, and one
//! of its API key's once the key is known ([`crate::rate`]); a refusal is
//! `429 rate_limited` with `Retry-After`.
//!
//! Errors of every kind — the service's, bad paths and queries, bodies
//! over the limit or compressed, unknown routes, wrong methods, panics, and
//! the requests hyper refuses before routing ([`wire`]) — are answered as
//! `{"error": {"code": "...", "message": "..."}}` with [`Code::status`].

mod backup;
mod console;
mod error;
mod events;
mod handlers;
pub mod openapi;
mod serve;
mod starting;
pub(crate) mod stream;
pub(crate) mod wire;

#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use axum::extract::{ConnectInfo, MatchedPath, Request, State};
use axum::http::header::{AUTHORIZATION, HOST, ORIGIN, UPGRADE, WWW_AUTHENTICATE};
use axum::http::{HeaderValue, Method};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::{on, MethodFilter, MethodRouter};
use axum::Router;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use parking_lot::Mutex;
use tower_http::catch_panic::CatchPanicLayer;

use crate::rate::RateLimits;
use crate::settings::{ApiKey, Scope, Settings, DEFAULT_MAX_BODY_BYTES};
use podium_core::backend::Backend;
use podium_core::error::{ApiError, Code};
use podium_core::op::Op;

pub use serve::serve;
pub use starting::Routing;
pub use stream::{EXPORT_CHUNK, IMPORT_BATCH, MAX_IMPORT_LINE_BYTES};

/// What the HTTP frontend needs from the settings.
#[derive(Clone)]
pub struct HttpConfig {
    /// Keys accepted in `Authorization: Bearer KEY`; empty: no auth.
    pub api_keys: Vec<ApiKey>,
    /// Largest JSON request body (`import` streams and is not bound by it).
    pub max_body_bytes: usize,
    /// How long a request body may take to arrive; `None`: no limit.
    pub body_timeout: Option<Duration>,
    /// The rate limits, shared with the other frontends. A request's
    /// client address is its `ConnectInfo<Peer>`, which [`serve`] gives
    /// every request.
    pub rate: Arc<RateLimits>,
    /// Log every request at info (`podium::access`).
    pub access_log: bool,
    /// Without API keys, the host names requests may name besides IP
    /// addresses and localhost (`*`: any).
    pub hosts: Vec<String>,
    /// Turns true when the server stops: event streams end then (a
    /// stream never finishes by itself, and the server waits for open
    /// requests before it exits).
    pub stop: Option<tokio::sync::watch::Receiver<bool>>,
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            api_keys: Vec::new(),
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            body_timeout: None,
            rate: Arc::default(),
            access_log: false,
            hosts: Vec::new(),
            stop: None,
        }
    }
}

impl HttpConfig {
    /// From the settings, with the rate limits every frontend shares and
    /// the server's stop signal.
    pub fn new(
        s: &Settings,
        rate: Arc<RateLimits>,
        stop: tokio::sync::watch::Receiver<bool>,
    ) -> Self {
        HttpConfig {
            api_keys: s.api_keys.clone(),
            max_body_bytes: s.max_body_bytes,
            body_timeout: (s.limits.http_body_secs > 0)
                .then(|| Duration::from_secs(s.limits.http_body_secs)),
            rate,
            access_log: s.access_log,
            hosts: s.http_hosts.clone(),
            stop: Some(stop),
        }
    }

    /// The position of the configured key equal to `presented`, comparing
    /// with every key so the time taken does not tell which matched.
    fn position_of(&self, presented: &str) -> Option<usize> {
        ApiKey::position_among(&self.api_keys, presented.as_bytes())
    }
}

/// Shared by every handler.
pub(crate) struct AppState {
    pub(crate) be: Arc<dyn Backend>,
    pub(crate) cfg: HttpConfig,
    pub(crate) metrics: Option<PrometheusHandle>,
    request_metrics: RequestMetrics,
}

pub(crate) type St = Arc<AppState>;

/// One route: method, path template (axum syntax, also the OpenAPI path),
/// the operation it performs (its name is the operation id unless `id`
/// says otherwise, its scope the one a key needs), and its handler.
pub(crate) struct RouteDef {
    pub method: &'static str,
    pub path: &'static str,
    pub op: Op,
    /// Its OpenAPI operation, when not the operation's own name: one
    /// operation served by routes with other parameters (ranges by rank
    /// and by score; `NAME_by_query`, the member in the query).
    pub id: Option<&'static str>,
    pub handler: fn(MethodFilter) -> MethodRouter<St>,
}

use handlers as h;

/// Every route of the HTTP API. The router, the auth layer and the OpenAPI
/// document all read this one table.
#[rustfmt::skip]
pub(crate) const ROUTES: &[RouteDef] = &[
    RouteDef { method: "GET", path: "/healthz", op: Op::Healthz, id: None, handler: |f| on(f, h::healthz) },
    RouteDef { method: "GET", path: "/readyz", op: Op::Readyz, id: None, handler: |f| on(f, h::readyz) },
    RouteDef { method: "GET", path: "/metrics", op: Op::Metrics, id: None, handler: |f| on(f, h::metrics) },
    RouteDef { method: "GET", path: "/openapi.json", op: Op::Openapi, id: None, handler: |f| on(f, h::openapi) },
    RouteDef { method: "GET", path: "/v1/key", op: Op::KeyInfo, id: None, handler: |f| on(f, h::key_info) },
    RouteDef { method: "GET", path: "/v1/backup", op: Op::Backup, id: None, handler: |f| on(f, backup::backup) },
    RouteDef { method: "GET", path: "/v1/boards", op: Op::Boards, id: None, handler: |f| on(f, h::boards) },
    RouteDef { method: "PUT", path: "/v1/boards/{board}", op: Op::BoardPut, id: None, handler: |f| on(f, h::board_put) },
    RouteDef { method: "PATCH", path: "/v1/boards/{board}", op: Op::BoardPatch, id: None, handler: |f| on(f, h::board_patch) },
    RouteDef { method: "GET", path: "/v1/boards/{board}", op: Op::BoardInfo, id: None, handler: |f| on(f, h::board_info) },
    RouteDef { method: "GET", path: "/v1/boards/{board}/resort", op: Op::ResortStatus, id: None, handler: |f| on(f, h::resort_status) },
    RouteDef { method: "DELETE", path: "/v1/boards/{board}", op: Op::BoardDelete, id: None, handler: |f| on(f, h::board_delete) },
    RouteDef { method: "POST", path: "/v1/boards/{board}/scores", op: Op::Submit, id: None, handler: |f| on(f, h::submit) },
    RouteDef { method: "GET", path: "/v1/boards/{board}/top", op: Op::Top, id: None, handler: |f| on(f, h::top) },
    RouteDef { method: "GET", path: "/v1/boards/{board}/members/{member}", op: Op::Entry, id: None, handler: |f| on(f, h::entry) },
    RouteDef { method: "PATCH", path: "/v1/boards/{board}/members/{member}", op: Op::SetData, id: None, handler: |f| on(f, h::set_data) },
    RouteDef { method: "DELETE", path: "/v1/boards/{board}/members/{member}", op: Op::RemoveMember, id: None, handler: |f| on(f, h::remove_member) },
    RouteDef { method: "POST", path: "/v1/boards/{board}/remove", op: Op::Remove, id: None, handler: |f| on(f, h::remove) },
    RouteDef { method: "GET", path: "/v1/boards/{board}/rank/{member}", op: Op::Rank, id: None, handler: |f| on(f, h::rank) },
    RouteDef { method: "GET", path: "/v1/boards/{board}/percentile/{member}", op: Op::Percentile, id: None, handler: |f| on(f, h::percentile) },
    RouteDef { method: "GET", path: "/v1/boards/{board}/score_at_percentile", op: Op::ScoreAtPercentile, id: None, handler: |f| on(f, h::score_at_percentile) },
    RouteDef { method: "GET", path: "/v1/boards/{board}/around/{member}", op: Op::Around, id: None, handler: |f| on(f, h::around) },
    // The member routes again with the member in the query, on the
    // collection path: the form for ids a URL path cannot carry (`.` and
    // `..`, dot segments to every URL parser, percent-encoded too).
    RouteDef { method: "GET", path: "/v1/boards/{board}/members", op: Op::Entry, id: Some("entry_by_query"), handler: |f| on(f, h::entry) },
    RouteDef { method: "PATCH", path: "/v1/boards/{board}/members", op: Op::SetData, id: Some("set_data_by_query"), handler: |f| on(f, h::set_data) },
    RouteDef { method: "DELETE", path: "/v1/boards/{board}/members", op: Op::RemoveMember, id: Some("remove_member_by_query"), handler: |f| on(f, h::remove_member) },
    RouteDef { method: "GET", path: "/v1/boards/{board}/rank", op: Op::Rank, id: Some("rank_by_query"), handler: |f| on(f, h::rank) },
    RouteDef { method: "GET", path: "/v1/boards/{board}/percentile", op: Op::Percentile, id: Some("percentile_by_query"), handler: |f| on(f, h::percentile) },
    RouteDef { method: "GET", path: "/v1/boards/{board}/around", op: Op::Around, id: Some("around_by_query"), handler: |f| on(f, h::around) },
    RouteDef { method: "GET", path: "/v1/boards/{board}/search", op: Op::Search, id: None, handler: |f| on(f, h::search) },
    RouteDef { method: "GET", path: "/v1/boards/{board}/range/rank", op: Op::Range, id: Some("range_by_rank"), handler: |f| on(f, h::range_by_rank) },
    RouteDef { method: "GET", path: "/v1/boards/{board}/range/score", op: Op::Range, id: Some("range_by_score"), handler: |f| on(f, h::range_by_score) },
    RouteDef { method: "DELETE", path: "/v1/boards/{board}/range/rank", op: Op::RemoveRange, id: Some("remove_range_by_rank"), handler: |f| on(f, h::remove_range_by_rank) },
    RouteDef { method: "DELETE", path: "/v1/boards/{board}/range/score", op: Op::RemoveRange, id: Some("remove_range_by_score"), handler: |f| on(f, h::remove_range_by_score) },
    RouteDef { method: "GET", path: "/v1/boards/{board}/count", op: Op::Count, id: None, handler: |f| on(f, h::count) },
    // A read sent as POST (the member list may be long): read scope.
    RouteDef { method: "POST", path: "/v1/boards/{board}/ranks", op: Op::Ranks, id: None, handler: |f| on(f, h::ranks) },
    RouteDef { method: "POST", path: "/v1/boards/{board}/reset", op: Op::Reset, id: None, handler: |f| on(f, h::reset) },
    RouteDef { method: "POST", path: "/v1/boards/{board}/merge", op: Op::Merge, id: None, handler: |f| on(f, h::merge) },
    RouteDef { method: "POST", path: "/v1/boards/{board}/intersect", op: Op::Intersect, id: None, handler: |f| on(f, h::intersect) },
    RouteDef { method: "GET", path: "/v1/boards/{board}/export", op: Op::Export, id: None, handler: |f| on(f, stream::export) },
    RouteDef { method: "POST", path: "/v1/boards/{board}/import", op: Op::Import, id: None, handler: |f| on(f, stream::import) },
    RouteDef { method: "GET", path: "/v1/boards/{board}/events", op: Op::Subscribe, id: None, handler: |f| on(f, events::events) },
];

/// The web console's paths (GET only), labelled by these templates in the
/// request metrics.
const CONSOLE_PATHS: [&str; 4] = ["/", "/console", "/console/", "/console/{file}"];

/// `(method, path template)` of every route, e.g. for clients and tests.
pub fn route_list() -> Vec<(&'static str, &'static str)> {
    ROUTES.iter().map(|r| (r.method, r.path)).collect()
}

fn method_filter(m: &str) -> MethodFilter {
    match m {
        "GET" => MethodFilter::GET,
        "PUT" => MethodFilter::PUT,
        "POST" => MethodFilter::POST,
        "DELETE" => MethodFilter::DELETE,
        "PATCH" => MethodFilter::PATCH,
        _ => unreachable!("ROUTES holds only GET/PUT/POST/DELETE/PATCH"),
    }
}

/// The HTTP API over `be`. `metrics`: the handle `/metrics` renders (from
/// [`install_metrics`]); without one `/metrics` answers an empty document.
pub fn router(be: Arc<dyn Backend>, cfg: HttpConfig, metrics: Option<PrometheusHandle>) -> Router {
    let st: St = Arc::new(AppState {
        be,
        cfg,
        metrics,
        request_metrics: RequestMetrics::default(),
    });
    let mut r: Router<St> = Router::new();
    for def in ROUTES {
        r = r.route(def.path, (def.handler)(method_filter(def.method)));
    }
    // The console is pages, not API: outside ROUTES and the OpenAPI
    // document, open like `/healthz`.
    r = r
        .route(CONSOLE_PATHS[0], axum::routing::get(console::to_console))
        .route(CONSOLE_PATHS[1], axum::routing::get(console::to_console))
        .route(CONSOLE_PATHS[2], axum::routing::get(console::index))
        .route(CONSOLE_PATHS[3], axum::routing::get(console::file));
    r.fallback(h::not_found)
        .layer(CatchPanicLayer::custom(error::panic_response))
        .layer(middleware::from_fn_with_state(st.clone(), front))
        .with_state(st)
}

pub use crate::callstats::SECONDS_BUCKETS;

/// The `# HELP` text of every series registered in the recorder (the
/// series rendered at scrape time write their own).
fn describe_metrics() {
    use metrics::{describe_counter, describe_gauge, describe_histogram, Unit};
    describe_counter!(
        "podium_http_requests_total",
        "HTTP requests answered, by route template, method and status."
    );
    describe_histogram!(
        "podium_http_request_seconds",
        Unit::Seconds,
        "Time from an HTTP request's arrival to its answer, by route template and method."
    );
    describe_counter!(
        "podium_rpc_errors_total",
        "MessagePack-RPC calls answered with an error, by error code."
    );
    describe_counter!(
        "podium_rate_limited_total",
        "Requests refused by a rate limit: per key, per client address, or a board's per-member limit."
    );
    describe_counter!(
        "podium_rejected_connections_total",
        "Connections refused because maxclients were open, by protocol."
    );
    describe_gauge!(
        "podium_connections",
        "Client connections open now, by protocol."
    );
    describe_gauge!("podium_boards", "Boards that exist, archives included.");
    describe_gauge!(
        "podium_resident_memory_bytes",
        Unit::Bytes,
        "Resident memory of the process, as the memory budget sees it."
    );
    describe_gauge!(
        "podium_used_memory_bytes",
        Unit::Bytes,
        "Memory the process's allocations hold (Redis's used_memory)."
    );
    describe_gauge!(
        "podium_memory_bytes",
        Unit::Bytes,
        "What holds the used memory, by part: boards, search_index, archives, keyspace, log_buffers, event_rings, connections, other (the rest of podium_used_memory_bytes)."
    );
    describe_gauge!(
        "podium_maxmemory_bytes",
        Unit::Bytes,
        "The memory budget (0: none); writes are refused past it."
    );
    describe_gauge!(
        "podium_log_bytes",
        Unit::Bytes,
        "Bytes of log written since the last snapshot (the embedded store)."
    );
    describe_gauge!(
        "podium_log_failed",
        "1 while the log cannot be written (writes refused, /healthz 503), else 0."
    );
    describe_gauge!(
        "podium_snapshot_pending",
        "1 while a snapshot is due or being written, else 0."
    );
    describe_gauge!(
        "podium_snapshot_bytes",
        Unit::Bytes,
        "Size of the last snapshot written."
    );
    describe_histogram!(
        "podium_snapshot_seconds",
        Unit::Seconds,
        "Time to write a snapshot."
    );
    describe_histogram!(
        "podium_fsync_seconds",
        Unit::Seconds,
        "Time of each fsync of the log."
    );
    describe_counter!(
        "podium_webhook_deliveries_total",
        "Webhook deliveries attempted, by result (ok, failed)."
    );
    describe_counter!(
        "podium_webhook_events_total",
        "Events delivered to webhooks."
    );
    // Counters that may stay at zero for a long time exist from the start,
    // so a dashboard's rate() has a series to read.
    for protocol in ["http", "rpc", "resp"] {
        metrics::counter!("podium_rejected_connections_total", "protocol" => protocol).increment(0);
    }
    for result in ["ok", "failed"] {
        metrics::counter!("podium_webhook_deliveries_total", "result" => result).increment(0);
    }
    metrics::counter!("podium_webhook_events_total").increment(0);
}

/// Installs the process-wide Prometheus recorder (once; later calls return
/// the same handle) and starts a thread that runs its upkeep every 5 s.
pub fn install_metrics() -> PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE
        .get_or_init(|| {
            let builder = PrometheusBuilder::new();
            let builder = match builder
                .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), SECONDS_BUCKETS)
            {
                Ok(b) => b,
                Err(_) => PrometheusBuilder::new(),
            };
            match builder.install_recorder() {
                Ok(handle) => {
                    describe_metrics();
                    let h = handle.clone();
                    let _ = std::thread::Builder::new()
                        .name("metrics-upkeep".into())
                        .spawn(move || loop {
                            std::thread::sleep(Duration::from_secs(5));
                            h.run_upkeep();
                        });
                    handle
                }
                Err(e) => {
                    // Another recorder is installed: this handle renders
                    // nothing, but the server keeps working.
                    tracing::warn!("metrics recorder not installed: {e}");
                    PrometheusBuilder::new().build_recorder().handle()
                }
            }
        })
        .clone()
}

impl AppState {
    /// Sets the unlabelled gauges read at scrape time and returns the
    /// per-board series as exposition text, to be appended to the
    /// recorder's. The per-board series are rendered from the board list
    /// of this scrape and never registered in the recorder: a registered
    /// series lives as long as the process, so every board ever deleted
    /// would stay in `/metrics` (and in memory) for good. With the
    /// storage unreachable the per-board series are left out.
    pub(crate) async fn update_gauges(&self) -> String {
        for (name, value) in self.be.storage_gauges() {
            metrics::gauge!(name).set(value);
        }
        // Read now, not at the last second's sample: a client comparing
        // two scrapes (the events bench's memory per subscriber) sees
        // what changed in between. The parts are of the same reading.
        let used = podium_core::memory::used();
        metrics::gauge!("podium_used_memory_bytes").set(used as f64);
        // Eight fixed series: registered once, not per board.
        for (part, bytes) in self.be.memory_use().with_process_parts().parts(used) {
            metrics::gauge!("podium_memory_bytes", "part" => part).set(bytes as f64);
        }
        let boards = match self.be.boards(&podium_core::ops::ListBoards).await {
            Ok(b) => b.boards,
            Err(e) => {
                tracing::debug!("metrics: boards not read: {e}");
                return String::new();
            }
        };
        metrics::gauge!("podium_boards").set(boards.len() as f64);
        // The in-process index's size; a Redis backend's index is Redis's.
        let index_bytes: HashMap<String, u64> = self.be.search_index_bytes().into_iter().collect();
        board_series(&boards, &index_bytes)
    }
}

/// The per-board series in the Prometheus text format, one family after
/// another, each under its `# HELP` and `# TYPE` lines. A live board has
/// its own `podium_board_members` and `podium_search_index_bytes`; the
/// archives a reset made are summed per board they archive
/// (`podium_archives`, `podium_archive_members`,
/// `podium_archive_search_index_bytes`), so the number of series follows
/// the number of live boards, not the number of resets.
fn board_series(
    boards: &[podium_core::api::BoardSize],
    index_bytes: &HashMap<String, u64>,
) -> String {
    use std::collections::BTreeMap;
    use std::fmt::Write as _;

    #[derive(Default)]
    struct Archived {
        count: u64,
        members: u64,
        index_bytes: u64,
        heap_bytes: u64,
    }
    let mut archived: BTreeMap<&str, Archived> = BTreeMap::new();
    let mut live = Vec::with_capacity(boards.len());
    for b in boards {
        let bytes = index_bytes.get(&b.board).copied().unwrap_or(0);
        match &b.archive_of {
            Some(of) => {
                let a = archived.entry(of.as_str()).or_default();
                a.count += 1;
                a.members += b.members;
                a.index_bytes += bytes;
                a.heap_bytes += b.heap_bytes;
            }
            None => live.push((b.board.as_str(), b.members, bytes, b.heap_bytes)),
        }
    }
    let mut out = String::new();
    let mut family = |name: &str, help: &str, rows: &mut dyn Iterator<Item = (&str, u64)>| {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge");
        for (board, v) in rows {
            let _ = writeln!(out, "{name}{{board=\"{}\"}} {v}", label_value(board));
        }
        out.push('\n');
    };
    family(
        "podium_board_members",
        "Members of each board (archives are in podium_archive_members).",
        &mut live.iter().map(|l| (l.0, l.1)),
    );
    family(
        "podium_search_index_bytes",
        "Heap bytes of each board's search index (0 until its first search).",
        &mut live.iter().map(|l| (l.0, l.2)),
    );
    family(
        "podium_board_heap_bytes",
        "Heap bytes of each board's structures, its search index included (archives are in podium_archive_heap_bytes).",
        &mut live.iter().map(|l| (l.0, l.3)),
    );
    family(
        "podium_archives",
        "Archives that resets of the board made and that still exist.",
        &mut archived.iter().map(|(b, a)| (*b, a.count)),
    );
    family(
        "podium_archive_members",
        "Members of the board's archives, summed.",
        &mut archived.iter().map(|(b, a)| (*b, a.members)),
    );
    family(
        "podium_archive_heap_bytes",
        "Heap bytes of the board's archives, summed.",
        &mut archived.iter().map(|(b, a)| (*b, a.heap_bytes)),
    );
    family(
        "podium_archive_search_index_bytes",
        "Heap bytes of the search indexes of the board's archives, summed.",
        &mut archived.iter().map(|(b, a)| (*b, a.index_bytes)),
    );
    out
}

/// A label value escaped as the text format wants: backslash, double
/// quote and line feed.
fn label_value(v: &str) -> std::borrow::Cow<'_, str> {
    if !v.contains(['\\', '"', '\n']) {
        return v.into();
    }
    let mut s = String::with_capacity(v.len() + 2);
    for c in v.chars() {
        match c {
            '\\' => s.push_str("\\\\"),
            '"' => s.push_str("\\\""),
            '\n' => s.push_str("\\n"),
            c => s.push(c),
        }
    }
    s.into()
}

/// The route row a request matched, found once per request.
struct Matched {
    /// The template, as a `&'static str` from ROUTES: no copy of the path
    /// per request.
    path: &'static str,
    /// The operation of the request's method there, if it has one.
    op: Option<Op>,
    /// The scope the request needs; `None`: open.
    needed: Option<Scope>,
}

/// The route row of a request for `path` (a matched template) with
/// `method`, in one pass over ROUTES.
fn matched(path: &str, method: &Method) -> Option<Matched> {
    let mut found: Option<Matched> = None;
    let mut guarded = false;
    for r in ROUTES.iter().filter(|r| r.path == path) {
        if r.method == method.as_str() || (r.method == "GET" && method == Method::HEAD) {
            return Some(Matched {
                path: r.path,
                op: Some(r.op),
                needed: r.op.scope(),
            });
        }
        guarded |= r.op.scope().is_some();
        found.get_or_insert(Matched {
            path: r.path,
            op: None,
            needed: None,
        });
    }
    // Another method on a known path: guarded like the path's routes.
    found.map(|m| Matched {
        needed: guarded.then_some(Scope::Read),
        ..m
    })
}

/// The memory budget's refusal of a request that would add data.
fn memory_refusal(route: Option<&Matched>) -> Option<Response> {
    let op = route?.op?;
    podium_core::memory::admit(op)
        .err()
        .map(|e| error::error_response(&e))
}

/// The rate limits and API key check of a request for `route` (`None`: no
/// route matched, no key needed): the refusal, or `None` when the request
/// may go on.
fn refusal(st: &AppState, route: Option<&Matched>, req: &Request) -> Option<Response> {
    let needed = route.and_then(|m| m.needed);
    if route.is_none() || needed.is_some() {
        let peer = req
            .extensions()
            .get::<ConnectInfo<Peer>>()
            .map(|c| c.0 .0.ip());
        if let Err(r) = st.cfg.rate.check(None, peer) {
            return Some(error::error_response(&r.to_error()));
        }
    }
    if st.cfg.api_keys.is_empty() {
        return keyless_refusal(&st.cfg.hosts, req);
    }
    let needed = needed?;
    let Some(key) = bearer(req.headers()) else {
        return Some(unauthorized(
            "this request needs an API key: Authorization: Bearer KEY",
        ));
    };
    let Some(position) = st.cfg.position_of(key) else {
        return Some(unauthorized("unknown API key"));
    };
    match st.cfg.api_keys[position].scope {
        s if !s.allows(needed) => Some(error::error_response(&ApiError::new(
            Code::Forbidden,
            format!(
                "this request needs a key of scope {}; this key has scope {}",
                needed.as_str(),
                s.as_str()
            ),
        ))),
        _ => st
            .cfg
            .rate
            .check(Some(position), None)
            .err()
            .map(|r| error::error_response(&r.to_error())),
    }
}

/// A server without API keys does what any request asks, so it answers
/// only requests a web page on another site cannot make: one naming a host
/// other than an IP address, localhost or a configured name (a page's own
/// name, pointed at this server: DNS rebinding) is refused, and so is one
/// that changes data, or opens a WebSocket, from another origin (a page's
/// cross-site request; request bodies must be JSON too, which a page
/// cannot send across sites without the server's consent).
fn keyless_refusal(allowed: &[String], req: &Request) -> Option<Response> {
    let host = req
        .uri()
        .authority()
        .map(|a| a.as_str())
        .or_else(|| req.headers().get(HOST)?.to_str().ok());
    if let Some(host) = host.filter(|h| !host_allowed(allowed, h)) {
        return Some(error::error_response(&ApiError::new(
            Code::Forbidden,
            format!(
                "host {host:?} is not a name this server answers to without API keys: \
                 name it with --http-host, or set API keys"
            ),
        )));
    }
    let changes = !matches!(*req.method(), Method::GET | Method::HEAD | Method::OPTIONS);
    if !changes && !req.headers().contains_key(UPGRADE) {
        return None;
    }
    let origin = req.headers().get(ORIGIN)?;
    let same = origin
        .to_str()
        .ok()
        .and_then(|o| o.split_once("://"))
        .is_some_and(|(_, o)| host.is_some_and(|h| o.eq_ignore_ascii_case(h)));
    (!same).then(|| {
        error::error_response(&ApiError::new(
            Code::Forbidden,
            format!(
                "a request from another origin ({}) is refused by a server without API keys",
                String::from_utf8_lossy(origin.as_bytes())
            ),
        ))
    })
}

/// Whether a request may name `host` (`NAME[:PORT]`) of a server without
/// API keys: an IP address (no name a page could rebind), localhost, or a
/// name of `allowed`.
fn host_allowed(allowed: &[String], host: &str) -> bool {
    if host.starts_with('[') {
        return true;
    }
    let name = match host.rsplit_once(':') {
        Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => host,
    };
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    name.parse::<std::net::Ipv4Addr>().is_ok()
        || name == "localhost"
        || name.ends_with(".localhost")
        || allowed.iter().any(|a| a == "*" || *a == name)
}

/// The key of an `Authorization: Bearer KEY` header.
pub(crate) fn bearer(headers: &axum::http::HeaderMap) -> Option<&str> {
    let v = headers.get(AUTHORIZATION)?.to_str().ok()?;
    let (scheme, key) = v.trim().split_once(' ')?;
    scheme.eq_ignore_ascii_case("bearer").then(|| key.trim())
}

/// The client address of an HTTP connection, for the rate limits: put
/// into each request's extensions as `ConnectInfo<Peer>` by [`serve`].
#[derive(Debug, Clone, Copy)]
pub struct Peer(pub SocketAddr);

fn unauthorized(msg: &str) -> Response {
    let mut r = error::error_response(&ApiError::new(Code::Unauthorized, msg));
    r.headers_mut()
        .insert(WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    r
}

/// What every request passes through, after routing and outside the
/// panic catcher: the API key check, the refusal of a compressed body,
/// the JSON form of any error answer, and the request count and time by
/// route template, method and status.
/// One middleware rather than three: each axum `from_fn` layer clones and
/// boxes the service inside it on every request, which showed at tens of
/// thousands of requests a second.
async fn front(State(st): State<St>, req: Request, next: Next) -> Response {
    let start = Instant::now();
    let method = match *req.method() {
        Method::GET => "GET",
        Method::HEAD => "HEAD",
        Method::POST => "POST",
        Method::PUT => "PUT",
        Method::PATCH => "PATCH",
        Method::DELETE => "DELETE",
        Method::OPTIONS => "OPTIONS",
        _ => "other",
    };
    // The access log's line, taken before the request moves on.
    let access = st.cfg.access_log.then(|| {
        let peer = req
            .extensions()
            .get::<ConnectInfo<Peer>>()
            .map(|c| c.0 .0.to_string())
            .unwrap_or_default();
        (peer, req.uri().path().to_string())
    });
    let template = req.extensions().get::<MatchedPath>().map(|p| p.as_str());
    let console = template.and_then(|t| CONSOLE_PATHS.into_iter().find(|c| *c == t));
    let route = template.and_then(|p| matched(p, req.method()));
    let refused = refusal(&st, route.as_ref(), &req)
        .or_else(|| memory_refusal(route.as_ref()))
        .or_else(|| error::encoding_refusal(&req));
    let resp = match refused {
        None => error::json_errors(next.run(req).await).await,
        Some(refused) => refused,
    };
    let took = start.elapsed();
    let status = resp.status().as_u16();
    if let Some(op) = route.as_ref().and_then(|m| m.op) {
        crate::callstats::http_operation(op, status < 400, took);
    }
    let (requests, seconds) = st.request_metrics.handles(
        route.map_or(console.unwrap_or("unmatched"), |m| m.path),
        method,
        status,
    );
    requests.increment(1);
    seconds.record(took.as_secs_f64());
    if let Some((peer, path)) = access {
        tracing::info!(
            target: "podium::access",
            peer,
            method,
            path,
            status,
            ms = took.as_secs_f64() * 1e3,
        );
    }
    resp
}

/// The `podium_http_requests_total` counter and `podium_http_request_seconds`
/// histogram of each (route, method, status) seen, registered once: the
/// `metrics` macros build, hash and look up a labelled key (and allocate
/// its label strings) on every call, which showed at tens of thousands of
/// requests a second. Handles come from the recorder installed when the
/// first request of a kind arrives (`serve` installs it before routing).
#[derive(Default)]
pub(crate) struct RequestMetrics {
    handles: Mutex<HashMap<RequestKind, (metrics::Counter, metrics::Histogram)>>,
}

type RequestKind = (&'static str, &'static str, u16);

impl RequestMetrics {
    fn handles(
        &self,
        route: &'static str,
        method: &'static str,
        status: u16,
    ) -> (metrics::Counter, metrics::Histogram) {
        self.handles
            .lock()
            .entry((route, method, status))
            .or_insert_with(|| {
                (
                    metrics::counter!(
                        "podium_http_requests_total",
                        "route" => route,
                        "method" => method,
                        "status" => status.to_string()
                    ),
                    metrics::histogram!(
                        "podium_http_request_seconds",
                        "route" => route,
                        "method" => method
                    ),
                )
            })
            .clone()
    }
}
