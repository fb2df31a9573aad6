//! The OpenAPI 3.1 document served at `/openapi.json`. Paths and methods
//! come from [`ROUTES`](super::ROUTES), so the document lists exactly the
//! routes the server has; what each operation takes and returns is written
//! out below.

use serde_json::{json, Map, Value};

use super::{ROUTES, SECONDS_BUCKETS};
use podium_core::error::Code;
use podium_core::ops::{DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, MAX_RANGE};

fn r(name: &str) -> Value {
    json!({ "$ref": format!("#/components/schemas/{name}") })
}

fn p(name: &str) -> Value {
    json!({ "$ref": format!("#/components/parameters/{name}") })
}

fn query(name: &str, schema: Value, description: &str) -> Value {
    json!({ "name": name, "in": "query", "required": false, "schema": schema, "description": description })
}

fn query_required(name: &str, schema: Value, description: &str) -> Value {
    json!({ "name": name, "in": "query", "required": true, "schema": schema, "description": description })
}

fn json_body(schema: Value, description: &str) -> Value {
    json!({
        "required": true,
        "description": description,
        "content": { "application/json": { "schema": schema } }
    })
}

fn ok(schema: Value, description: &str) -> Value {
    json!({ "200": { "description": description, "content": { "application/json": { "schema": schema } } } })
}

/// What one operation takes and returns: `summary`, `parameters`,
/// optional `requestBody`, and its success `responses`.
pub(crate) fn operation(op: &str) -> Option<Value> {
    if let Some(base) = op.strip_suffix("_by_query") {
        return operation(base).map(member_in_query);
    }
    let b = p("board");
    let m = p("member");
    let v = match op {
        "healthz" => json!({
            "summary": "Liveness check",
            "description": "200 while the storage answers; 503 storage_unavailable while it does not (a Redis backend that cannot be reached, or an embedded log that cannot write: full disk, lost permissions, no file descriptors left; the message says which, and the answer is 200 again once the log has recovered by itself). While the server starts (recovering its data directory, or connecting to Redis) it answers 200 with status starting: the process is alive; /readyz says when it serves.",
            "parameters": [],
            "responses": ok(json!({"type": "object", "properties": {"status": {"type": "string", "enum": ["ok", "starting"]}, "backend": {"type": "string", "enum": ["embedded", "redis"]}, "version": {"type": "string"}, "commit": {"type": "string", "description": "git's short hash of the source, or unknown"}}, "required": ["status", "backend", "version", "commit"]}), "The server is alive (and its storage up, once started)"),
        }),
        "readyz" => json!({
            "summary": "Readiness check",
            "description": "200 once the server serves: its storage is open (the data directory recovered, or Redis connected) and answers, and it is not shutting down. 503 not_ready while it starts (every other request but /healthz gets the same answer then) or shuts down; 503 storage_unavailable while the storage does not answer. A load balancer sends traffic only to a ready node.",
            "parameters": [],
            "responses": ok(json!({"type": "object", "properties": {"status": {"const": "ready"}}, "required": ["status"], "additionalProperties": false}), "The server serves"),
        }),
        "metrics" => json!({
            "summary": "Prometheus metrics",
            "description": format!("Text exposition format: podium_http_requests_total{{route,method,status}}, podium_http_request_seconds{{route,method}}, podium_operations_total{{op,protocol,status}}, podium_operation_seconds{{op,protocol}}, podium_rpc_requests_total{{method,status}}, podium_rpc_request_seconds{{method}}, podium_resp_commands_total{{command,status}}, podium_resp_command_seconds{{command}}, podium_board_members{{board}}, podium_board_heap_bytes{{board}}, podium_search_index_bytes{{board}}, podium_archives{{board}}, podium_archive_members{{board}}, podium_archive_heap_bytes{{board}}, podium_archive_search_index_bytes{{board}} (series of existing boards only; archives summed per board they archive), podium_boards, podium_used_memory_bytes, podium_memory_bytes{{part}} (boards, search_index, archives, keyspace, log_buffers, event_rings, connections, other), podium_log_bytes, podium_log_failed, podium_fsync_seconds, podium_snapshot_bytes, podium_snapshot_seconds, podium_snapshot_pending. Histogram buckets (seconds): {SECONDS_BUCKETS:?}."),
            "parameters": [],
            "responses": { "200": { "description": "Metrics", "content": { "text/plain": { "schema": { "type": "string" } } } } },
        }),
        "openapi" => json!({
            "summary": "This document",
            "parameters": [],
            "responses": ok(json!({"type": "object"}), "OpenAPI 3.1 document"),
        }),
        "key_info" => json!({
            "summary": "The presented key's scope",
            "description": "Whether API keys are configured, and the scope of the key this request presents (with no keys configured, every request may do everything: scope admin). The web console asks it to show what the key may do.",
            "parameters": [],
            "responses": ok(json!({"type": "object", "properties": {"keys": {"type": "boolean"}, "scope": {"type": "string", "enum": ["read", "write", "admin"]}}, "required": ["keys", "scope"], "additionalProperties": false}), "The key's scope"),
        }),
        "backup" => json!({
            "summary": "A consistent copy of the data directory",
            "description": "A tar archive: the newest snapshot and the log segments after it up to a cut made with writers paused for an instant (writes go on meanwhile), then MANIFEST.json with each file's size and SHA-256. `podium backup DIR` unpacks and checks it; `podium restore DIR --data-dir NEW` makes a data directory of it. A stream that ends without its manifest is incomplete. 501 unsupported with the Redis backend (back up Redis itself) or a memory-only server.",
            "parameters": [],
            "responses": { "200": { "description": "The backup as a tar stream", "content": { "application/x-tar": { "schema": { "type": "string", "format": "binary" } } } } },
        }),
        "boards" => json!({
            "summary": "List boards with their sizes",
            "parameters": [],
            "responses": ok(r("BoardsOut"), "Every board, archives included"),
        }),
        "board_put" => json!({
            "summary": "Create a board, or replace its whole config",
            "description": "Creates the board with this config, or replaces an existing board's config with it: every field left out or null takes its default (PATCH changes some fields and keeps the others). A change that re-ranks an existing board (order, ranking, tiebreak or sort) is refused with 409 confirm_rerank_required unless the body says \"confirm_rerank\": true. An empty body is the default config.",
            "parameters": [b],
            "requestBody": { "required": false, "content": { "application/json": { "schema": r("BoardConfig") } } },
            "responses": {
                "200": { "description": "Reconfigured", "content": { "application/json": { "schema": r("BoardOut") } } },
                "201": { "description": "Created", "content": { "application/json": { "schema": r("BoardOut") } } }
            },
        }),
        "board_patch" => json!({
            "summary": "Change some fields of a board's config",
            "description": "A JSON merge patch (RFC 7396) of the board's config: the fields it names change, the others keep their values; a field set to null goes back to its default. A change that re-ranks the board (order, ranking, tiebreak or sort) is refused with 409 confirm_rerank_required unless the body says \"confirm_rerank\": true. A missing board is 404 board_not_found (PUT creates one).",
            "parameters": [b],
            "requestBody": json_body(r("BoardPatch"), "The fields to change"),
            "responses": ok(r("BoardOut"), "The board, reconfigured"),
        }),
        "board_info" => json!({
            "summary": "A board's size and config",
            "parameters": [b],
            "responses": ok(r("BoardOut"), "The board"),
        }),
        "resort_status" => json!({
            "summary": "How far a re-ranking board_update has gone",
            "description": "A board_update that changes a board's order (order, ranking, tiebreak or sort keys) re-ranks it from its stored values in one durable step; meanwhile this answers how many members are in place. running is false (and done = total = 0) when none is; a missing board is 404 board_not_found.",
            "parameters": [b],
            "responses": ok(r("ResortOut"), "The progress"),
        }),
        "board_delete" => json!({
            "summary": "Delete a board",
            "parameters": [b],
            "responses": ok(r("DeletedOut"), "Deleted"),
        }),
        "submit" => json!({
            "summary": "Submit one score, or a batch",
            "description": "An entry object submits one score (its error is the request's error); an array submits a batch in order with one durable commit, each entry answered by its result or its own error. The board is created with the default config if absent.",
            "parameters": [b],
            "requestBody": json_body(json!({"oneOf": [r("SubmitIn"), {"type": "array", "items": r("SubmitIn")}]}), "An entry or an array of entries"),
            "responses": ok(json!({"oneOf": [r("SubmitOut"), r("SubmitBatchOut")]}), "SubmitOut for an object, SubmitBatchOut for an array"),
        }),
        "top" => json!({
            "summary": "A page of the board, best first",
            "parameters": [b, p("page"), p("page_size"), p("with_data")],
            "responses": ok(r("TopOut"), "The page"),
        }),
        "entry" => json!({
            "summary": "A member's rank, score, name, data, percentile and page",
            "parameters": [b, m, p("page_size")],
            "responses": ok(r("EntryInfoOut"), "The member"),
        }),
        "set_data" => json!({
            "summary": "Set a member's display name and/or data",
            "parameters": [b, m],
            "requestBody": json_body(r("SetDataIn"), "The fields to set"),
            "responses": ok(r("SetDataOut"), "Set"),
        }),
        "remove_member" => json!({
            "summary": "Remove a member",
            "parameters": [b, m],
            "responses": ok(r("RemovedOut"), "Removed (404 member_not_found if it was not there)"),
        }),
        "remove" => json!({
            "summary": "Remove members",
            "parameters": [b],
            "requestBody": json_body(r("RemoveIn"), "The members"),
            "responses": ok(r("RemovedOut"), "How many were removed"),
        }),
        "rank" => json!({
            "summary": "A member's rank and score",
            "parameters": [b, m],
            "responses": ok(r("RankOut"), "The rank"),
        }),
        "percentile" => json!({
            "summary": "A member's percentile",
            "parameters": [b, m],
            "responses": ok(r("PercentileOut"), "The share of the board (0–100) the member is at least as good as"),
        }),
        "score_at_percentile" => json!({
            "summary": "The entry at a percentile",
            "parameters": [b, query_required("p", json!({"type": "number", "minimum": 0, "maximum": 100}), "Percentile, 0 to 100")],
            "responses": ok(r("ScoreAtOut"), "The entry (null on an empty board)"),
        }),
        "around" => json!({
            "summary": "The page centred on a member",
            "parameters": [b, m, p("page_size"), p("with_data")],
            "responses": ok(r("AroundOut"), "The entries around the member"),
        }),
        "search" => json!({
            "summary": "Find members by name (docs/spec.md §3)",
            "description": "Words separated by spaces; the last word and `word*` match by prefix, others exactly; `\"word\"` forces exact; `field:word` restricts a word to one of the board's search_fields. Every word must match a distinct word of the member. Results best first, with `total` for paging. The first search of a board builds its index.",
            "parameters": [b,
                query_required("q", json!({"type": "string"}), "The query (one with no word matches nothing)"),
                query("limit", json!({"type": "integer", "minimum": 0, "maximum": MAX_PAGE_SIZE, "default": DEFAULT_PAGE_SIZE}), "Most entries to return"),
                query("offset", json!({"type": "integer", "minimum": 0, "maximum": u64::MAX, "default": 0}), "Matches to skip"),
                p("with_data")],
            "responses": ok(r("SearchOut"), "The matching entries"),
        }),
        "range_by_rank" => json!({
            "summary": "Entries by rank",
            "description": format!("count places from rank start (1-based; default {DEFAULT_PAGE_SIZE}, at most {MAX_RANGE} per call: export reads a whole board). from=worst counts from the worst end."),
            "parameters": [b, p("start"),
                query("count", json!({"type": "integer", "minimum": 1, "maximum": MAX_RANGE, "default": DEFAULT_PAGE_SIZE}), "Places to read"),
                p("from"), p("with_data")],
            "responses": ok(r("RangeOut"), "The entries"),
        }),
        "range_by_score" => json!({
            "summary": "Entries by score",
            "description": format!("Scores between min and max (Redis syntax; absent: no bound), skipping offset and returning at most limit (default {DEFAULT_PAGE_SIZE}). from=worst counts from the worst end."),
            "parameters": [b, p("min"), p("max"), p("from"),
                query("offset", json!({"type": "integer", "minimum": 0, "maximum": u64::MAX}), "Entries to skip"),
                query("limit", json!({"type": "integer", "minimum": 0, "maximum": u64::MAX}), &format!("Most entries to return (more than {MAX_RANGE} reads {MAX_RANGE})")),
                p("with_data")],
            "responses": ok(r("RangeOut"), "The entries"),
        }),
        "remove_range_by_rank" => json!({
            "summary": "Remove entries by rank",
            "description": "count places from rank start (1-based), counted from the best.",
            "parameters": [b, p("start"),
                query_required("count", json!({"type": "integer", "minimum": 1, "maximum": u64::MAX}), "Places to remove")],
            "responses": ok(r("RemovedOut"), "How many were removed"),
        }),
        "remove_range_by_score" => json!({
            "summary": "Remove entries by score",
            "description": "Both bounds are required (-inf / +inf for no bound): a removal says what it removes.",
            "parameters": [b, p("min_required"), p("max_required")],
            "responses": ok(r("RemovedOut"), "How many were removed"),
        }),
        "count" => json!({
            "summary": "Members, all or in a score range",
            "parameters": [b, p("min"), p("max")],
            "responses": ok(r("CountOut"), "The count"),
        }),
        "ranks" => json!({
            "summary": "Ranks of a list of members (e.g. friends), sorted",
            "parameters": [b],
            "requestBody": json_body(r("RanksIn"), "The members"),
            "responses": ok(r("RanksOut"), "Found members in board order, and the missing ones"),
        }),
        "reset" => json!({
            "summary": "Archive the board now and empty it",
            "parameters": [b],
            "responses": ok(r("ResetOut"), "The archive made"),
        }),
        "merge" => json!({
            "summary": "Union of boards into this board (ZUNIONSTORE)",
            "parameters": [b],
            "requestBody": json_body(r("CombineIn"), "Sources, weights, aggregate"),
            "responses": ok(r("CombineOut"), "The destination's size"),
        }),
        "intersect" => json!({
            "summary": "Intersection of boards into this board (ZINTERSTORE)",
            "parameters": [b],
            "requestBody": json_body(r("CombineIn"), "Sources, weights, aggregate"),
            "responses": ok(r("CombineOut"), "The destination's size"),
        }),
        "export" => json!({
            "summary": "Every entry, best first, as NDJSON",
            "description": "Streamed: one ExportLine per line.",
            "parameters": [b],
            "responses": { "200": { "description": "NDJSON stream", "content": { "application/x-ndjson": { "schema": r("ExportLine") } } } },
        }),
        "subscribe" => json!({
            "summary": "Live events of the board (Server-Sent Events, or a WebSocket)",
            "description": format!("A text/event-stream of the board's events: each message has `id:` (the event id, LSN-N), `event:` (its type) and `data:` (one JSON object with id, type, board and the type's fields; see docs/spec.md §5). Types: change (no filter), enter/leave/move (top), member (members), reset, config, created, deleted, snapshot, reload, lagged. With `Upgrade: websocket` the same events come as WebSocket text messages. Resume with the Last-Event-ID header or `since`: the events after it follow with no gap while they are kept (a filter's last {} events, for `events_retain` seconds after its last subscriber left), else a `reload` event (and a snapshot) says to read the state again. A new filter past the server's bounds on filters (per member, per board, in all) is refused with 503 too_many_clients; a WebSocket client that sends a data message is closed (1008): the stream takes none.", podium_core::events::ring::RING_EVENTS),
            "parameters": [b,
                query("top", json!({"type": "integer", "minimum": 1, "maximum": podium_core::events::MAX_TOP}), "Members entering, leaving or moving within the best N places"),
                query("members", json!({"type": "string"}), "Comma-separated members whose every rank or score change is sent (empty parts are skipped)"),
                query("member", json!({"type": "string", "minLength": 1, "maxLength": podium_engine::MAX_MEMBER_BYTES}), "One watched member (repeatable; for ids holding commas)"),
                query("snapshot", json!({"type": "boolean", "default": false}), "Send the current state first"),
                query("since", json!({"type": "string", "pattern": "^[0-9]{1,19}(-[0-9]{1,9})?$"}), "Resume after this event id (Last-Event-ID wins)")],
            "responses": { "200": { "description": "An event stream", "content": { "text/event-stream": { "schema": {
                "description": "One message of the stream",
                "type": "object",
                "required": ["data"],
                "properties": {
                    "id": {"type": "string", "pattern": "^[0-9]+(-[0-9]+)?$"},
                    "event": {"type": "string", "enum": podium_core::events::Kind::NAMES},
                    "data": {"type": "string", "contentMediaType": "application/json"},
                    "retry": {"type": "integer"}
                }
            } } } } },
        }),
        "import" => json!({
            "summary": "Bulk load from NDJSON or CSV (streamed)",
            "description": format!("The body is read as a stream (not bound by the body size limit; each line at most {} bytes) and submitted in batches of {}, one durable commit each. NDJSON: one SubmitIn per line (export's lines are accepted: their rank is ignored). CSV: member,score[,name] with an optional header line, or a header naming the board's sort keys (member,laps,time_ms[,name]) and one column per key; RFC 4180 quoting. A bad line fails alone.", super::MAX_IMPORT_LINE_BYTES, super::IMPORT_BATCH),
            "parameters": [b, query("format", json!({"type": "string", "enum": ["ndjson", "csv"]}), "Default: csv for Content-Type text/csv, else ndjson")],
            "requestBody": { "required": false, "description": "Text: a line that is not a valid record fails alone (and is reported); an empty body imports nothing.", "content": {
                "application/x-ndjson": { "schema": {} },
                "text/csv": { "schema": {} }
            } },
            "responses": ok(r("ImportOut"), "Counts and the first errors"),
        }),
        _ => return None,
    };
    Some(v)
}

/// Operation `NAME_by_query`: NAME with the member in the query instead
/// of the path.
fn member_in_query(mut op: Value) -> Value {
    let (in_path, in_query) = (p("member"), p("member_query"));
    for param in op["parameters"].as_array_mut().expect("parameters") {
        if *param == in_path {
            *param = in_query.clone();
        }
    }
    let summary = op["summary"].as_str().unwrap_or_default();
    op["summary"] = json!(format!("{summary}, the member named in the query"));
    let said = op
        .get("description")
        .and_then(Value::as_str)
        .map_or(String::new(), |d| format!("{d} "));
    op["description"] = json!(format!(
        "{said}The same operation as with the member in the path, for ids a URL path cannot carry: `.` and `..` are dot segments to every URL parser (browsers, Node's fetch, httpx, the url crate), which drops them from a path, percent-encoded or not."
    ));
    op
}

fn schemas() -> Value {
    let codes: Vec<&str> = Code::ALL.iter().map(|c| c.as_str()).collect();
    let ranking = json!({"type": "string", "enum": ["unique", "dense", "competition"], "description": "The board's ranking mode"});
    let entry_props = json!({
        "member": {"type": "string"},
        "score": r("Score"),
        "scores": r("Scores"),
        "rank": {"type": "integer", "minimum": 1},
        "name": {"type": "string"},
        "data": {"type": "object"}
    });
    let mut m = Map::new();
    m.insert(
        "Error".into(),
        json!({
            "type": "object",
            "required": ["error"],
            "properties": { "error": r("ErrorBody") }
        }),
    );
    m.insert(
        "ErrorBody".into(),
        json!({
            "type": "object",
            "required": ["code", "message"],
            "properties": {
                "code": {"type": "string", "enum": codes},
                "message": {"type": "string"}
            }
        }),
    );
    m.insert("Score".into(), json!({
            "description": "A finite number, or \"inf\" / \"-inf\". Strings holding a number are accepted on input; NaN is refused.",
            "oneOf": [{"type": "number"}, {"type": "string", "enum": ["inf", "-inf"]}]
        }));
    m.insert("Scores".into(), json!({
            "type": "object",
            "description": "A board with sort keys: each key's value by key name. A number, or a string holding one: JSON carries an int key's value beyond ±2^53 and an infinity as a string. In a submission, keys left out are kept (incr only).",
            "maxProperties": podium_engine::MAX_SORT_KEYS,
            "propertyNames": {"minLength": 1, "maxLength": podium_engine::sort::MAX_KEY_NAME_BYTES},
            "additionalProperties": {"oneOf": [{"type": "number"}, {"type": "string", "pattern": "^[-+]?(inf|[0-9]{1,15}(\\.[0-9]{1,15})?([eE][-+]?[0-9]{1,2})?)$"}]}
        }));
    m.insert("BoardName".into(), json!({
            "type": "string", "minLength": 1, "maxLength": podium_engine::store::MAX_BOARD_NAME, "pattern": BOARD_NAME,
            "description": "1–200 bytes of UTF-8 without control characters"
        }));
    m.insert("SortKey".into(), json!({
            "type": "object",
            "additionalProperties": false,
            "required": ["key"],
            "properties": {
                "key": {"type": "string", "minLength": 1, "maxLength": podium_engine::sort::MAX_KEY_NAME_BYTES, "pattern": "^[^,\\u0000-\\u001F\\u007F-\\u009F]+$", "description": "No commas or control characters"},
                "order": {"type": ["string", "null"], "enum": ["desc", "asc", null], "default": "desc"},
                "type": {"type": ["string", "null"], "enum": ["float", "int", null], "default": "float", "description": "int: exact signed 64-bit integers"},
                "op": {"type": ["string", "null"], "enum": ["incr", "set", "max", "min", null], "default": "incr", "description": "What an incr submission does to this key"}
            }
        }));
    m.insert("SubmitIn".into(), json!({
            "type": "object",
            "additionalProperties": false,
            "required": ["member"],
            // score, or else scores (as an object).
            "if": {"not": {"required": ["score"]}},
            "then": {"required": ["scores"], "properties": {"scores": {"type": "object"}}},
            "description": "Gives score, or (a board with sort keys) scores: the other one is 409 wrong_kind.",
            "properties": {
                "member": {"type": "string", "minLength": 1, "maxLength": podium_engine::MAX_MEMBER_BYTES, "description": "1–512 bytes"},
                "score": r("Score"),
                "scores": {"oneOf": [r("Scores"), {"type": "null"}]},
                "op": {"type": ["string", "null"], "enum": ["set", "best", "incr", null], "description": "Default (or null): the board's update"},
                "only": {"type": ["string", "null"], "enum": ["new", "existing", null]},
                "cond": {"type": ["string", "null"], "enum": ["gt", "lt", null]},
                "name": {"type": ["string", "null"], "description": "Display name; \"\" clears it, null leaves it"},
                "data": {"type": ["object", "null"], "description": "A JSON object stored with the member"}
            }
        }));
    m.insert("SubmitOut".into(), json!({
            "type": "object",
            "required": ["member", "score", "rank", "previous", "changed", "created", "applied", "evicted"],
            "properties": {
                "member": {"type": "string"},
                "score": {"oneOf": [r("Score"), {"type": "null"}]},
                "rank": {"type": ["integer", "null"]},
                "previous": {"oneOf": [r("Score"), {"type": "null"}]},
                "changed": {"type": "boolean"},
                "created": {"type": "boolean"},
                "applied": {"type": "boolean"},
                "evicted": {"type": "integer"},
                "scores": r("Scores"),
                "previous_scores": r("Scores")
            }
        }));
    m.insert(
        "SubmitItem".into(),
        json!({
            "oneOf": [r("SubmitOut"), {
                "type": "object",
                "required": ["member", "error"],
                "properties": {"member": {"type": "string"}, "error": r("ErrorBody")}
            }]
        }),
    );
    m.insert("SubmitBatchOut".into(), json!({
            "type": "object",
            "required": ["board", "results"],
            "properties": {"board": {"type": "string"}, "results": {"type": "array", "items": r("SubmitItem")}}
        }));
    m.insert(
        "EntryOut".into(),
        json!({
            "type": "object",
            "required": ["member", "score", "rank"],
            "properties": entry_props
        }),
    );
    m.insert("EntryInfoOut".into(), json!({
            "type": "object",
            "required": ["board", "ranking", "member", "score", "rank", "percentile", "page", "total"],
            "properties": {
                "board": {"type": "string"},
                "ranking": ranking,
                "member": {"type": "string"},
                "score": r("Score"),
                "scores": r("Scores"),
                "rank": {"type": "integer"},
                "name": {"type": "string"},
                "data": {"type": "object"},
                "percentile": {"type": "number"},
                "page": {"type": "integer"},
                "total": {"type": "integer"}
            }
        }));
    m.insert("RankOut".into(), json!({
            "type": "object",
            "required": ["board", "ranking", "member", "rank", "score"],
            "properties": {"board": {"type": "string"}, "ranking": ranking, "member": {"type": "string"}, "rank": {"type": "integer"}, "score": r("Score")}
        }));
    m.insert("TopOut".into(), json!({
            "type": "object",
            "required": ["board", "ranking", "page", "page_size", "total", "total_pages", "entries"],
            "properties": {
                "board": {"type": "string"}, "ranking": ranking,
                "page": {"type": "integer"}, "page_size": {"type": "integer"},
                "total": {"type": "integer"}, "total_pages": {"type": "integer"},
                "entries": {"type": "array", "items": r("EntryOut")}
            }
        }));
    m.insert("RangeOut".into(), json!({
            "type": "object",
            "required": ["board", "ranking", "total", "entries"],
            "properties": {"board": {"type": "string"}, "ranking": ranking, "total": {"type": "integer"}, "entries": {"type": "array", "items": r("EntryOut")}}
        }));
    m.insert("SearchOut".into(), json!({
            "type": "object",
            "required": ["board", "ranking", "query", "total", "offset", "limit", "entries"],
            "properties": {"board": {"type": "string"}, "ranking": ranking, "query": {"type": "string"},
                "total": {"type": "integer"}, "offset": {"type": "integer"}, "limit": {"type": "integer"},
                "entries": {"type": "array", "items": r("EntryOut")}}
        }));
    m.insert(
        "AroundOut".into(),
        json!({
            "type": "object",
            "required": ["board", "ranking", "member", "rank", "total", "entries"],
            "properties": {
                "board": {"type": "string"}, "ranking": ranking, "member": {"type": "string"},
                "rank": {"type": "integer"}, "total": {"type": "integer"},
                "entries": {"type": "array", "items": r("EntryOut")}
            }
        }),
    );
    m.insert("RanksIn".into(), json!({
            "type": "object",
            "additionalProperties": false,
            "required": ["members"],
            "properties": {"members": {"type": "array", "items": {"type": "string"}}, "with_data": {"type": "boolean"}}
        }));
    m.insert(
        "RanksOut".into(),
        json!({
            "type": "object",
            "required": ["board", "ranking", "entries", "missing"],
            "properties": {
                "board": {"type": "string"}, "ranking": ranking,
                "entries": {"type": "array", "items": r("EntryOut")},
                "missing": {"type": "array", "items": {"type": "string"}}
            }
        }),
    );
    m.insert(
        "RemoveIn".into(),
        json!({
            "type": "object",
            "additionalProperties": false,
            "required": ["members"],
            "properties": {"members": {"type": "array", "items": {"type": "string"}}}
        }),
    );
    m.insert(
        "RemovedOut".into(),
        json!({
            "type": "object",
            "required": ["board", "removed"],
            "properties": {"board": {"type": "string"}, "removed": {"type": "integer"}}
        }),
    );
    m.insert(
        "CountOut".into(),
        json!({
            "type": "object",
            "required": ["board", "count"],
            "properties": {"board": {"type": "string"}, "count": {"type": "integer"}}
        }),
    );
    m.insert("PercentileOut".into(), json!({
            "type": "object",
            "required": ["board", "member", "percentile"],
            "properties": {"board": {"type": "string"}, "member": {"type": "string"}, "percentile": {"type": "number"}}
        }));
    m.insert("ResortOut".into(), json!({
            "type": "object",
            "required": ["board", "running", "done", "total"],
            "properties": {"board": {"type": "string"}, "running": {"type": "boolean"}, "done": {"type": "integer"}, "total": {"type": "integer"}}
        }));
    m.insert("ScoreAtOut".into(), json!({
            "type": "object",
            "required": ["board", "percentile", "entry"],
            "properties": {"board": {"type": "string"}, "percentile": {"type": "number"}, "entry": {"oneOf": [r("EntryOut"), {"type": "null"}]}}
        }));
    m.insert("BoardConfig".into(), json!({
            "type": "object",
            "additionalProperties": false,
            "description": "A whole config (PUT): settings left out or null take their defaults, on a new board and on an existing one alike.",
            // With sort keys, the board's order is the first key's (which
            // is desc unless it says asc): an order given must agree.
            "dependentSchemas": {"order": {"anyOf": [
                {"properties": {"order": {"type": "null"}}},
                {"not": {"required": ["sort"]}},
                {"properties": {"sort": {"type": "null"}}},
                {"properties": {"order": {"const": "desc"}, "sort": {"prefixItems": [{"properties": {"order": {"const": "desc"}}}]}}},
                {"properties": {"order": {"const": "asc"}, "sort": {"prefixItems": [{"required": ["order"], "properties": {"order": {"const": "asc"}}}]}}}
            ]}},
            "properties": {
                "order": {"type": ["string", "null"], "enum": ["desc", "asc", null]},
                "ranking": {"type": ["string", "null"], "enum": ["unique", "dense", "competition", null]},
                "tiebreak": {"type": ["string", "null"], "enum": ["member", "first", "last", null]},
                "update": {"type": ["string", "null"], "enum": ["set", "best", "incr", null]},
                "min_score": {"oneOf": [r("Score"), {"type": "null"}]},
                "max_score": {"oneOf": [r("Score"), {"type": "null"}]},
                "max_members": {"type": ["integer", "null"], "minimum": 1},
                "reset": {"type": ["string", "null"], "pattern": RESET, "description": "never, daily, weekly, monthly or a cron expression (UTC) that fires: minute hour day-of-month month day-of-week, optionally seconds first (the pattern shows a simple subset)"},
                "keep_archives": {"type": ["integer", "null"], "minimum": 0, "maximum": u32::MAX},
                "search_fields": {"type": ["array", "null"], "maxItems": podium_engine::search::MAX_SEARCH_FIELDS, "uniqueItems": true, "items": {"type": "string", "minLength": 1, "maxLength": 64, "pattern": SEARCH_FIELD, "description": "1–64 bytes without ':', '\"' or white space"}},
                "max_data_bytes": {"type": ["integer", "null"], "minimum": 0},
                "sort": {"type": ["array", "null"], "minItems": 1, "uniqueItems": true, "maxItems": podium_engine::MAX_SORT_KEYS, "items": r("SortKey"), "description": "Rank by these keys lexicographically, then by tiebreak; the first key's order is the board's order"},
                "max_submits_per_member": {"oneOf": [{
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["count", "per"],
                    "description": "At most count submissions (submit, and each entry of submit_many; not import) of one member per period; more are refused with rate_limited",
                    "properties": {
                        "count": {"type": "integer", "minimum": 1},
                        "per": {"oneOf": [{"type": "number", "minimum": 0.001, "exclusiveMaximum": 1e12, "description": "seconds"}, {"type": "string", "pattern": "^[1-9][0-9]{0,8}(ms|s|m|h|d)?$", "description": "a duration: 500ms, 30s, 1m, 2h, 1d"}]}
                    }
                }, {"type": "null"}]},
                "webhooks": {"type": ["array", "null"], "maxItems": podium_engine::webhook::MAX_WEBHOOKS, "items": r("Webhook"), "description": "Endpoints (a later hook of a name replaces an earlier one) the board's live events are POSTed to, signed (docs/spec.md §4, Webhooks); embedded store only"},
                "confirm_rerank": {"type": ["boolean", "null"], "writeOnly": true, "description": "true: the change may re-rank the board (a change of order, ranking, tiebreak or sort); without it such a change of an existing board is 409 confirm_rerank_required. Not part of the config"},
                "archive_of": {"type": "string", "readOnly": true, "description": "On an archive only: the board it archives (set by reset; refused in a request)"},
                "archive_seq": {"type": "integer", "minimum": 1, "readOnly": true, "description": "On an archive only: its place among that board's archives, counting up from the oldest; keep_archives keeps the highest"}
            }
        }));
    // What a board's config reads back: as written, but `per` and `reset`
    // in the server's own spellings (any duration, any cron expression).
    let mut config_out = m["BoardConfig"].clone();
    config_out["properties"]["reset"] = json!({"type": "string", "description": "never, daily, weekly, monthly or a cron expression (UTC)"});
    config_out["properties"]["max_submits_per_member"]["oneOf"][0]["properties"]["per"] =
        json!({"type": "string", "description": "The period, e.g. 500ms, 30s, 1m, 2h, 1d, 90.5s"});
    config_out
        .as_object_mut()
        .expect("an object")
        .remove("dependentSchemas");
    config_out["properties"]
        .as_object_mut()
        .expect("properties")
        .remove("confirm_rerank");
    config_out["description"] = json!("A board's config, every field filled in");
    // A patch names any of the config's fields (null: back to the
    // default). Whether `order` agrees with the first sort key depends on
    // the config it merges into, which no schema of the patch can know.
    let mut patch = m["BoardConfig"].clone();
    patch
        .as_object_mut()
        .expect("an object")
        .remove("dependentSchemas");
    // An object merges into the one there: `{"count": 5}` keeps the `per`
    // the board has.
    patch["properties"]["max_submits_per_member"]["oneOf"][0]
        .as_object_mut()
        .expect("an object")
        .remove("required");
    patch["description"] = json!("A JSON merge patch of a board's config (RFC 7396): the fields named change, null puts one back to its default, the others are kept");
    m.insert("BoardPatch".into(), patch);
    m.insert("BoardConfigOut".into(), config_out);
    m.insert("Webhook".into(), json!({
            "type": "object",
            "additionalProperties": false,
            "required": ["name", "url"],
            "properties": {
                "name": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,64}$", "description": "The hook's identity on the board: a later hook of the same name replaces an earlier one"},
                "url": {"type": "string", "format": "uri", "maxLength": podium_engine::webhook::MAX_URL, "description": "http:// or https://, no credentials; the address must be one --webhook-targets allows (loopback only by default)"},
                "secret": {"type": "string", "writeOnly": true, "minLength": podium_engine::webhook::SECRET_BYTES.0, "maxLength": podium_engine::webhook::SECRET_BYTES.1, "description": "Signs each delivery (Podium-Signature: sha256=HMAC-SHA256 of the body, hex). Never read back; left out when writing a config back, the hook of that name keeps its secret"},
                "top": {"type": "integer", "minimum": 1, "maximum": podium_engine::webhook::MAX_TOP, "description": "Members entering, leaving or moving within the best N places"},
                "members": {"type": "array", "maxItems": podium_engine::webhook::MAX_MEMBERS, "items": {"type": "string", "minLength": 1, "maxLength": podium_engine::MAX_MEMBER_BYTES}, "description": "Every change of these members' rank or score; with neither top nor members, every change"}
            }
        }));
    m.insert(
        "BoardOut".into(),
        json!({
            "type": "object",
            "required": ["board", "members", "read_only", "heap_bytes", "config"],
            "properties": {
                "board": {"type": "string"},
                "members": {"type": "integer"},
                "read_only": {"type": "boolean"},
                "heap_bytes": {"type": "integer"},
                "archive_of": {"type": "string", "description": "On an archive only: the board it archives"},
                "config": r("BoardConfigOut"),
                "period": {"type": "string", "description": "The reset period the board is in"},
                "next_reset": {"type": "string", "format": "date-time", "description": "When the board's schedule resets it next (UTC), on a board with one"},
                "created": {"type": "boolean", "description": "PUT: whether it created the board"}
            }
        }),
    );
    m.insert(
        "BoardsOut".into(),
        json!({
            "type": "object",
            "required": ["boards"],
            "properties": {"boards": {"type": "array", "items": {
                "type": "object",
                "required": ["board", "members", "heap_bytes"],
                "properties": {
                    "board": {"type": "string"},
                    "members": {"type": "integer"},
                    "archive_of": {"type": "string", "description": "On an archive only: the board it archives"},
                    "heap_bytes": {"type": "integer", "description": "Heap bytes of the board's structures, its search index included"}
                }
            }}}
        }),
    );
    m.insert(
        "DeletedOut".into(),
        json!({
            "type": "object",
            "required": ["board", "deleted"],
            "properties": {"board": {"type": "string"}, "deleted": {"const": true}}
        }),
    );
    m.insert("ResetOut".into(), json!({
            "type": "object",
            "required": ["board", "archive", "archived"],
            "properties": {"board": {"type": "string"}, "archive": {"type": "string"}, "archived": {"type": "integer"}}
        }));
    // One weight per source: JSON Schema cannot tie two lengths together,
    // so each length up to WEIGHTED_SOURCES is spelled out. (Under
    // `dependentSchemas`, where the type generators leave it alone.)
    let mut weighted = vec![json!({"properties": {"weights": {"type": "null"}}})];
    for k in 1..=WEIGHTED_SOURCES {
        weighted.push(json!({"properties": {
            "sources": {"minItems": k, "maxItems": k},
            "weights": {"type": "array", "minItems": k, "maxItems": k}
        }}));
    }
    m.insert(
        "CombineIn".into(),
        json!({
            "type": "object",
            "additionalProperties": false,
            "required": ["sources"],
            "dependentSchemas": {"weights": {"anyOf": weighted}},
            "properties": {
                "sources": {"type": "array", "items": r("BoardName"), "minItems": 1},
                "weights": {"type": ["array", "null"], "items": {"type": "number"}, "description": format!("One per source, in order (Redis's WEIGHTS); absent: all 1. The schema spells out up to {WEIGHTED_SOURCES} sources; the server takes any number.")},
                "aggregate": {"type": ["string", "null"], "enum": ["sum", "min", "max", null]}
            }
        }),
    );
    m.insert(
        "CombineOut".into(),
        json!({
            "type": "object",
            "required": ["board", "members"],
            "properties": {"board": {"type": "string"}, "members": {"type": "integer"}}
        }),
    );
    m.insert(
        "SetDataIn".into(),
        json!({
            "type": "object",
            "additionalProperties": false,
            "description": "A field left out or null stays as it is.",
            "properties": {"name": {"type": ["string", "null"], "description": "\"\" clears it"}, "data": {"type": ["object", "null"]}}
        }),
    );
    m.insert("SetDataOut".into(), json!({
            "type": "object",
            "required": ["board", "member", "found"],
            "properties": {"board": {"type": "string"}, "member": {"type": "string"}, "found": {"type": "boolean"}}
        }));
    m.insert(
        "ExportLine".into(),
        json!({
            "type": "object",
            "required": ["member", "score", "rank"],
            "properties": entry_props
        }),
    );
    m.insert(
        "ImportOut".into(),
        json!({
            "type": "object",
            "required": ["board", "imported", "failed", "errors"],
            "properties": {
                "board": {"type": "string"},
                "imported": {"type": "integer"},
                "failed": {"type": "integer"},
                "errors": {"type": "array", "maxItems": podium_core::ops::import::MAX_IMPORT_ERRORS, "items": {
                    "type": "object",
                    "required": ["line", "member", "error"],
                    "properties": {
                        "line": {"type": "integer", "minimum": 1},
                        "member": {"type": ["string", "null"]},
                        "error": r("ErrorBody")
                    }
                }}
            }
        }),
    );
    Value::Object(m)
}

/// A score bound's text (Redis syntax), as a pattern: what the server
/// reads, but for spellings a client has no need of (`Infinity`, `.5`).
const BOUND: &str = "^\\(?([-+]?inf|[-+]?[0-9]{1,15}(\\.[0-9]{1,15})?([eE][-+]?[0-9]{1,2})?)$";

/// A board name: what `Store::validate_user_name` accepts but for the
/// length, which the server counts in bytes and JSON Schema in characters.
const BOARD_NAME: &str = "^[^\\u0000-\\u001F\\u007F-\\u009F]+$";

/// A board's `reset`: the named schedules, or a cron expression of the
/// simple kind most schedules are (the server takes any that fires).
const RESET: &str = "^(never|daily|weekly|monthly|([1-5]?[0-9]|\\*) (1?[0-9]|2[0-3]|\\*) ([1-9]|1[0-9]|2[0-8]|\\*) ([1-9]|1[0-2]|\\*) \\*)$";

/// The most sources with weights the schema spells out.
const WEIGHTED_SOURCES: usize = 16;

/// A search field's name: no colon, quote or white space (Rust's
/// `char::is_whitespace`, spelled out).
const SEARCH_FIELD: &str =
    r#"^[^:"\t\n\u000B\f\r \u0085\u00A0\u1680\u2000-\u200A\u2028\u2029\u202F\u205F\u3000]+$"#;

fn parameters() -> Value {
    let bound = |which: &str| {
        format!("Score bound in Redis syntax: a number, -inf, +inf (or inf), or (number for an exclusive bound. Absent: no {which} bound.")
    };
    json!({
        "board": {"name": "board", "in": "path", "required": true, "schema": r("BoardName"),
                  "description": "Board name (1–200 bytes of UTF-8 without control characters, percent-encoded)"},
        "member": {"name": "member", "in": "path", "required": true, "schema": {"type": "string", "minLength": 1, "maxLength": podium_engine::MAX_MEMBER_BYTES},
                   "description": "Member id (percent-encoded; '/' as %2F). `.` and `..` cannot be sent in a path (URL parsers drop them as dot segments, percent-encoded too): the same route without /{member} takes the member in the query"},
        "member_query": query_required("member", json!({"type": "string", "minLength": 1, "maxLength": podium_engine::MAX_MEMBER_BYTES}),
                   "Member id, any (`.` and `..` too), percent-encoded as a query value; given once"),
        "page": query("page", json!({"type": "integer", "minimum": 1, "maximum": u64::MAX, "default": 1}), "1-based page number"),
        "page_size": query("page_size", json!({"type": "integer", "minimum": 1, "maximum": MAX_PAGE_SIZE, "default": DEFAULT_PAGE_SIZE}), "Entries per page"),
        "with_data": query("with_data", json!({"type": "boolean", "default": false}), "Include each entry's data"),
        "start": query_required("start", json!({"type": "integer", "minimum": 1, "maximum": u64::MAX}), "First rank (1-based)"),
        "min": query("min", json!({"type": "string", "pattern": BOUND, "examples": ["-inf", "10", "(10"]}), &bound("lower")),
        "max": query("max", json!({"type": "string", "pattern": BOUND, "examples": ["+inf", "100", "(100"]}), &bound("upper")),
        "min_required": query_required("min", json!({"type": "string", "pattern": BOUND, "examples": ["-inf", "10", "(10"]}), "Lower score bound in Redis syntax: a number, -inf, or (number for an exclusive bound"),
        "max_required": query_required("max", json!({"type": "string", "pattern": BOUND, "examples": ["+inf", "100", "(100"]}), "Upper score bound in Redis syntax: a number, +inf (or inf), or (number for an exclusive bound"),
        "from": query("from", json!({"type": "string", "enum": ["best", "worst"], "default": "best"}), "Count from the best or the worst end"),
    })
}

/// The whole document. `keys`: whether the server has API keys
/// configured; without them no request needs one, and the document says
/// so (no security requirement, no 401 or 403).
pub fn document(keys: bool) -> Value {
    let mut paths = Map::new();
    for route in ROUTES {
        let id = route.id.unwrap_or(route.op.name());
        let Some(mut op) = operation(id) else {
            continue;
        };
        let o = op.as_object_mut().expect("operations are objects");
        o.insert("operationId".into(), json!(id));
        let responses = o
            .entry("responses")
            .or_insert_with(|| json!({}))
            .as_object_mut()
            .expect("responses are objects");
        let err = json!({"$ref": "#/components/responses/Error"});
        match route.op.scope() {
            None => {
                o.insert("security".into(), json!([]));
            }
            Some(s) => {
                if keys {
                    responses.insert("401".into(), err.clone());
                    responses.insert("403".into(), err.clone());
                }
                o.insert("x-podium-scope".into(), json!(s.as_str()));
            }
        }
        let responses = o["responses"].as_object_mut().expect("responses");
        responses.insert("default".into(), err);
        let item = paths
            .entry(route.path.to_string())
            .or_insert_with(|| json!({}));
        item.as_object_mut()
            .expect("path items are objects")
            .insert(route.method.to_ascii_lowercase(), op);
    }
    let security = match keys {
        true => json!([{"bearer": []}]),
        false => json!([]),
    };
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "podium",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "podium leaderboard server: HTTP/JSON API. Every error is {\"error\": {\"code\", \"message\"}} with the code's status. When API keys are configured, /v1 routes and /metrics need Authorization: Bearer KEY with the scope in x-podium-scope (read ⊂ write ⊂ admin); this document is the running server's: with keys it requires the bearer scheme (and lists 401 and 403), without keys no request needs one, and a request naming a host other than an IP address, localhost or a name of --http-host, or one changing data (or opening a WebSocket) with an Origin other than the server's own, is refused with 403 forbidden. A request body is JSON with Content-Type application/json (or a +json type), an import's text/csv or application/x-ndjson: any other type, or a body without one, is refused with 415 unsupported_media_type.",
            "license": {"name": "MIT OR Apache-2.0", "identifier": "MIT OR Apache-2.0"}
        },
        "servers": [{"url": "http://127.0.0.1:7070"}],
        "security": security,
        "paths": paths,
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer", "description": "An API key"}},
            "schemas": schemas(),
            "parameters": parameters(),
            "responses": {
                "Error": {
                    "description": "An error: 4xx/5xx with its code",
                    "content": {"application/json": {"schema": r("Error")}}
                }
            }
        }
    })
}
