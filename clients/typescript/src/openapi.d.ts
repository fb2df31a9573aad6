// Generated from podium's GET /openapi.json by scripts/gen-types.mjs: do not edit.

export interface paths {
    "/healthz": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Liveness check
         * @description 200 while the storage answers; 503 storage_unavailable while it does not (a Redis backend that cannot be reached, or an embedded log that cannot write: full disk, lost permissions, no file descriptors left; the message says which, and the answer is 200 again once the log has recovered by itself). While the server starts (recovering its data directory, or connecting to Redis) it answers 200 with status starting: the process is alive; /readyz says when it serves.
         */
        get: operations["healthz"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/metrics": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Prometheus metrics
         * @description Text exposition format: podium_http_requests_total{route,method,status}, podium_http_request_seconds{route,method}, podium_operations_total{op,protocol,status}, podium_operation_seconds{op,protocol}, podium_rpc_requests_total{method,status}, podium_rpc_request_seconds{method}, podium_resp_commands_total{command,status}, podium_resp_command_seconds{command}, podium_board_members{board}, podium_board_heap_bytes{board}, podium_search_index_bytes{board}, podium_archives{board}, podium_archive_members{board}, podium_archive_heap_bytes{board}, podium_archive_search_index_bytes{board} (series of existing boards only; archives summed per board they archive), podium_boards, podium_used_memory_bytes, podium_memory_bytes{part} (boards, search_index, archives, keyspace, log_buffers, event_rings, connections, other), podium_log_bytes, podium_log_failed, podium_fsync_seconds, podium_snapshot_bytes, podium_snapshot_seconds, podium_snapshot_pending. Histogram buckets (seconds): [5e-5, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0].
         */
        get: operations["metrics"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/openapi.json": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** This document */
        get: operations["openapi"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/readyz": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Readiness check
         * @description 200 once the server serves: its storage is open (the data directory recovered, or Redis connected) and answers, and it is not shutting down. 503 not_ready while it starts (every other request but /healthz gets the same answer then) or shuts down; 503 storage_unavailable while the storage does not answer. A load balancer sends traffic only to a ready node.
         */
        get: operations["readyz"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/backup": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * A consistent copy of the data directory
         * @description A tar archive: the newest snapshot and the log segments after it up to a cut made with writers paused for an instant (writes go on meanwhile), then MANIFEST.json with each file's size and SHA-256. `podium backup DIR` unpacks and checks it; `podium restore DIR --data-dir NEW` makes a data directory of it. A stream that ends without its manifest is incomplete. 501 unsupported with the Redis backend (back up Redis itself) or a memory-only server.
         */
        get: operations["backup"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/boards": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** List boards with their sizes */
        get: operations["boards"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/boards/{board}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** A board's size and config */
        get: operations["board_info"];
        /**
         * Create a board, or replace its whole config
         * @description Creates the board with this config, or replaces an existing board's config with it: every field left out or null takes its default (PATCH changes some fields and keeps the others). A change that re-ranks an existing board (order, ranking, tiebreak or sort) is refused with 409 confirm_rerank_required unless the body says "confirm_rerank": true. An empty body is the default config.
         */
        put: operations["board_put"];
        post?: never;
        /** Delete a board */
        delete: operations["board_delete"];
        options?: never;
        head?: never;
        /**
         * Change some fields of a board's config
         * @description A JSON merge patch (RFC 7396) of the board's config: the fields it names change, the others keep their values; a field set to null goes back to its default. A change that re-ranks the board (order, ranking, tiebreak or sort) is refused with 409 confirm_rerank_required unless the body says "confirm_rerank": true. A missing board is 404 board_not_found (PUT creates one).
         */
        patch: operations["board_patch"];
        trace?: never;
    };
    "/v1/boards/{board}/around": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The page centred on a member, the member named in the query
         * @description The same operation as with the member in the path, for ids a URL path cannot carry: `.` and `..` are dot segments to every URL parser (browsers, Node's fetch, httpx, the url crate), which drops them from a path, percent-encoded or not.
         */
        get: operations["around_by_query"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/boards/{board}/around/{member}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The page centred on a member */
        get: operations["around"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/boards/{board}/count": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** Members, all or in a score range */
        get: operations["count"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/boards/{board}/events": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Live events of the board (Server-Sent Events, or a WebSocket)
         * @description A text/event-stream of the board's events: each message has `id:` (the event id, LSN-N), `event:` (its type) and `data:` (one JSON object with id, type, board and the type's fields; see docs/spec.md §5). Types: change (no filter), enter/leave/move (top), member (members), reset, config, created, deleted, snapshot, reload, lagged. With `Upgrade: websocket` the same events come as WebSocket text messages. Resume with the Last-Event-ID header or `since`: the events after it follow with no gap while they are kept (a filter's last 4096 events, for `events_retain` seconds after its last subscriber left), else a `reload` event (and a snapshot) says to read the state again. A new filter past the server's bounds on filters (per member, per board, in all) is refused with 503 too_many_clients; a WebSocket client that sends a data message is closed (1008): the stream takes none.
         */
        get: operations["subscribe"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/boards/{board}/export": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Every entry, best first, as NDJSON
         * @description Streamed: one ExportLine per line.
         */
        get: operations["export"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/boards/{board}/import": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Bulk load from NDJSON or CSV (streamed)
         * @description The body is read as a stream (not bound by the body size limit; each line at most 1048576 bytes) and submitted in batches of 10000, one durable commit each. NDJSON: one SubmitIn per line (export's lines are accepted: their rank is ignored). CSV: member,score[,name] with an optional header line, or a header naming the board's sort keys (member,laps,time_ms[,name]) and one column per key; RFC 4180 quoting. A bad line fails alone.
         */
        post: operations["import"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/boards/{board}/intersect": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Intersection of boards into this board (ZINTERSTORE) */
        post: operations["intersect"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/boards/{board}/members": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * A member's rank, score, name, data, percentile and page, the member named in the query
         * @description The same operation as with the member in the path, for ids a URL path cannot carry: `.` and `..` are dot segments to every URL parser (browsers, Node's fetch, httpx, the url crate), which drops them from a path, percent-encoded or not.
         */
        get: operations["entry_by_query"];
        put?: never;
        post?: never;
        /**
         * Remove a member, the member named in the query
         * @description The same operation as with the member in the path, for ids a URL path cannot carry: `.` and `..` are dot segments to every URL parser (browsers, Node's fetch, httpx, the url crate), which drops them from a path, percent-encoded or not.
         */
        delete: operations["remove_member_by_query"];
        options?: never;
        head?: never;
        /**
         * Set a member's display name and/or data, the member named in the query
         * @description The same operation as with the member in the path, for ids a URL path cannot carry: `.` and `..` are dot segments to every URL parser (browsers, Node's fetch, httpx, the url crate), which drops them from a path, percent-encoded or not.
         */
        patch: operations["set_data_by_query"];
        trace?: never;
    };
    "/v1/boards/{board}/members/{member}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** A member's rank, score, name, data, percentile and page */
        get: operations["entry"];
        put?: never;
        post?: never;
        /** Remove a member */
        delete: operations["remove_member"];
        options?: never;
        head?: never;
        /** Set a member's display name and/or data */
        patch: operations["set_data"];
        trace?: never;
    };
    "/v1/boards/{board}/merge": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Union of boards into this board (ZUNIONSTORE) */
        post: operations["merge"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/boards/{board}/percentile": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * A member's percentile, the member named in the query
         * @description The same operation as with the member in the path, for ids a URL path cannot carry: `.` and `..` are dot segments to every URL parser (browsers, Node's fetch, httpx, the url crate), which drops them from a path, percent-encoded or not.
         */
        get: operations["percentile_by_query"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/boards/{board}/percentile/{member}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** A member's percentile */
        get: operations["percentile"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/boards/{board}/range/rank": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Entries by rank
         * @description count places from rank start (1-based; default 25, at most 1000000 per call: export reads a whole board). from=worst counts from the worst end.
         */
        get: operations["range_by_rank"];
        put?: never;
        post?: never;
        /**
         * Remove entries by rank
         * @description count places from rank start (1-based), counted from the best.
         */
        delete: operations["remove_range_by_rank"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/boards/{board}/range/score": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Entries by score
         * @description Scores between min and max (Redis syntax; absent: no bound), skipping offset and returning at most limit (default 25). from=worst counts from the worst end.
         */
        get: operations["range_by_score"];
        put?: never;
        post?: never;
        /**
         * Remove entries by score
         * @description Both bounds are required (-inf / +inf for no bound): a removal says what it removes.
         */
        delete: operations["remove_range_by_score"];
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/boards/{board}/rank": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * A member's rank and score, the member named in the query
         * @description The same operation as with the member in the path, for ids a URL path cannot carry: `.` and `..` are dot segments to every URL parser (browsers, Node's fetch, httpx, the url crate), which drops them from a path, percent-encoded or not.
         */
        get: operations["rank_by_query"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/boards/{board}/rank/{member}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** A member's rank and score */
        get: operations["rank"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/boards/{board}/ranks": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Ranks of a list of members (e.g. friends), sorted */
        post: operations["ranks"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/boards/{board}/remove": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Remove members */
        post: operations["remove"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/boards/{board}/reset": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /** Archive the board now and empty it */
        post: operations["reset"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/boards/{board}/resort": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * How far a re-ranking board_update has gone
         * @description A board_update that changes a board's order (order, ranking, tiebreak or sort keys) re-ranks it from its stored values in one durable step; meanwhile this answers how many members are in place. running is false (and done = total = 0) when none is; a missing board is 404 board_not_found.
         */
        get: operations["resort_status"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/boards/{board}/score_at_percentile": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** The entry at a percentile */
        get: operations["score_at_percentile"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/boards/{board}/scores": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        get?: never;
        put?: never;
        /**
         * Submit one score, or a batch
         * @description An entry object submits one score (its error is the request's error); an array submits a batch in order with one durable commit, each entry answered by its result or its own error. The board is created with the default config if absent.
         */
        post: operations["submit"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/boards/{board}/search": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Find members by name (docs/spec.md §3)
         * @description Words separated by spaces; the last word and `word*` match by prefix, others exactly; `"word"` forces exact; `field:word` restricts a word to one of the board's search_fields. Every word must match a distinct word of the member. Results best first, with `total` for paging. The first search of a board builds its index.
         */
        get: operations["search"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/boards/{board}/top": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /** A page of the board, best first */
        get: operations["top"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/v1/key": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * The presented key's scope
         * @description Whether API keys are configured, and the scope of the key this request presents (with no keys configured, every request may do everything: scope admin). The web console asks it to show what the key may do.
         */
        get: operations["key_info"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
}
export type webhooks = Record<string, never>;
export interface components {
    schemas: {
        AroundOut: {
            board: string;
            entries: components["schemas"]["EntryOut"][];
            member: string;
            rank: number;
            /**
             * @description The board's ranking mode
             * @enum {string}
             */
            ranking: "unique" | "dense" | "competition";
            total: number;
        };
        /** @description A whole config (PUT): settings left out or null take their defaults, on a new board and on an existing one alike. */
        BoardConfig: {
            /** @description On an archive only: the board it archives (set by reset; refused in a request) */
            readonly archive_of?: string;
            /** @description On an archive only: its place among that board's archives, counting up from the oldest; keep_archives keeps the highest */
            readonly archive_seq?: number;
            /** @description true: the change may re-rank the board (a change of order, ranking, tiebreak or sort); without it such a change of an existing board is 409 confirm_rerank_required. Not part of the config */
            confirm_rerank?: boolean | null;
            keep_archives?: number | null;
            max_data_bytes?: number | null;
            max_members?: number | null;
            max_score?: components["schemas"]["Score"] | null;
            max_submits_per_member?: {
                count: number;
                per: number | string;
            } | null;
            min_score?: components["schemas"]["Score"] | null;
            /** @enum {string|null} */
            order?: "desc" | "asc" | null;
            /** @enum {string|null} */
            ranking?: "unique" | "dense" | "competition" | null;
            /** @description never, daily, weekly, monthly or a cron expression (UTC) that fires: minute hour day-of-month month day-of-week, optionally seconds first (the pattern shows a simple subset) */
            reset?: string | null;
            search_fields?: string[] | null;
            /** @description Rank by these keys lexicographically, then by tiebreak; the first key's order is the board's order */
            sort?: components["schemas"]["SortKey"][] | null;
            /** @enum {string|null} */
            tiebreak?: "member" | "first" | "last" | null;
            /** @enum {string|null} */
            update?: "set" | "best" | "incr" | null;
            /** @description Endpoints (a later hook of a name replaces an earlier one) the board's live events are POSTed to, signed (docs/spec.md §4, Webhooks); embedded store only */
            webhooks?: components["schemas"]["Webhook"][] | null;
        };
        /** @description A board's config, every field filled in */
        BoardConfigOut: {
            /** @description On an archive only: the board it archives (set by reset; refused in a request) */
            readonly archive_of?: string;
            /** @description On an archive only: its place among that board's archives, counting up from the oldest; keep_archives keeps the highest */
            readonly archive_seq?: number;
            keep_archives?: number | null;
            max_data_bytes?: number | null;
            max_members?: number | null;
            max_score?: components["schemas"]["Score"] | null;
            max_submits_per_member?: {
                count: number;
                /** @description The period, e.g. 500ms, 30s, 1m, 2h, 1d, 90.5s */
                per: string;
            } | null;
            min_score?: components["schemas"]["Score"] | null;
            /** @enum {string|null} */
            order?: "desc" | "asc" | null;
            /** @enum {string|null} */
            ranking?: "unique" | "dense" | "competition" | null;
            /** @description never, daily, weekly, monthly or a cron expression (UTC) */
            reset?: string;
            search_fields?: string[] | null;
            /** @description Rank by these keys lexicographically, then by tiebreak; the first key's order is the board's order */
            sort?: components["schemas"]["SortKey"][] | null;
            /** @enum {string|null} */
            tiebreak?: "member" | "first" | "last" | null;
            /** @enum {string|null} */
            update?: "set" | "best" | "incr" | null;
            /** @description Endpoints (a later hook of a name replaces an earlier one) the board's live events are POSTed to, signed (docs/spec.md §4, Webhooks); embedded store only */
            webhooks?: components["schemas"]["Webhook"][] | null;
        };
        /** @description 1–200 bytes of UTF-8 without control characters */
        BoardName: string;
        BoardOut: {
            /** @description On an archive only: the board it archives */
            archive_of?: string;
            board: string;
            config: components["schemas"]["BoardConfigOut"];
            /** @description PUT: whether it created the board */
            created?: boolean;
            heap_bytes: number;
            members: number;
            /**
             * Format: date-time
             * @description When the board's schedule resets it next (UTC), on a board with one
             */
            next_reset?: string;
            /** @description The reset period the board is in */
            period?: string;
            read_only: boolean;
        };
        /** @description A JSON merge patch of a board's config (RFC 7396): the fields named change, null puts one back to its default, the others are kept */
        BoardPatch: {
            /** @description On an archive only: the board it archives (set by reset; refused in a request) */
            readonly archive_of?: string;
            /** @description On an archive only: its place among that board's archives, counting up from the oldest; keep_archives keeps the highest */
            readonly archive_seq?: number;
            /** @description true: the change may re-rank the board (a change of order, ranking, tiebreak or sort); without it such a change of an existing board is 409 confirm_rerank_required. Not part of the config */
            confirm_rerank?: boolean | null;
            keep_archives?: number | null;
            max_data_bytes?: number | null;
            max_members?: number | null;
            max_score?: components["schemas"]["Score"] | null;
            max_submits_per_member?: {
                count?: number;
                per?: number | string;
            } | null;
            min_score?: components["schemas"]["Score"] | null;
            /** @enum {string|null} */
            order?: "desc" | "asc" | null;
            /** @enum {string|null} */
            ranking?: "unique" | "dense" | "competition" | null;
            /** @description never, daily, weekly, monthly or a cron expression (UTC) that fires: minute hour day-of-month month day-of-week, optionally seconds first (the pattern shows a simple subset) */
            reset?: string | null;
            search_fields?: string[] | null;
            /** @description Rank by these keys lexicographically, then by tiebreak; the first key's order is the board's order */
            sort?: components["schemas"]["SortKey"][] | null;
            /** @enum {string|null} */
            tiebreak?: "member" | "first" | "last" | null;
            /** @enum {string|null} */
            update?: "set" | "best" | "incr" | null;
            /** @description Endpoints (a later hook of a name replaces an earlier one) the board's live events are POSTed to, signed (docs/spec.md §4, Webhooks); embedded store only */
            webhooks?: components["schemas"]["Webhook"][] | null;
        };
        BoardsOut: {
            boards: {
                /** @description On an archive only: the board it archives */
                archive_of?: string;
                board: string;
                /** @description Heap bytes of the board's structures, its search index included */
                heap_bytes: number;
                members: number;
            }[];
        };
        CombineIn: {
            /** @enum {string|null} */
            aggregate?: "sum" | "min" | "max" | null;
            sources: components["schemas"]["BoardName"][];
            /** @description One per source, in order (Redis's WEIGHTS); absent: all 1. The schema spells out up to 16 sources; the server takes any number. */
            weights?: number[] | null;
        };
        CombineOut: {
            board: string;
            members: number;
        };
        CountOut: {
            board: string;
            count: number;
        };
        DeletedOut: {
            board: string;
            /** @constant */
            deleted: true;
        };
        EntryInfoOut: {
            board: string;
            data?: Record<string, never>;
            member: string;
            name?: string;
            page: number;
            percentile: number;
            rank: number;
            /**
             * @description The board's ranking mode
             * @enum {string}
             */
            ranking: "unique" | "dense" | "competition";
            score: components["schemas"]["Score"];
            scores?: components["schemas"]["Scores"];
            total: number;
        };
        EntryOut: {
            data?: Record<string, never>;
            member: string;
            name?: string;
            rank: number;
            score: components["schemas"]["Score"];
            scores?: components["schemas"]["Scores"];
        };
        Error: {
            error: components["schemas"]["ErrorBody"];
        };
        ErrorBody: {
            /** @enum {string} */
            code: "invalid_argument" | "invalid_score" | "invalid_member" | "invalid_board_name" | "invalid_data" | "invalid_config" | "malformed_request" | "payload_too_large" | "uri_too_long" | "unsupported_media_type" | "headers_too_large" | "board_not_found" | "member_not_found" | "not_found" | "method_not_allowed" | "board_exists" | "read_only" | "confirm_rerank_required" | "wrong_type" | "unauthorized" | "forbidden" | "rate_limited" | "storage_unavailable" | "out_of_memory" | "too_many_clients" | "request_timeout" | "not_ready" | "unsupported" | "internal";
            message: string;
        };
        ExportLine: {
            data?: Record<string, never>;
            member: string;
            name?: string;
            rank: number;
            score: components["schemas"]["Score"];
            scores?: components["schemas"]["Scores"];
        };
        ImportOut: {
            board: string;
            errors: {
                error: components["schemas"]["ErrorBody"];
                line: number;
                member: string | null;
            }[];
            failed: number;
            imported: number;
        };
        PercentileOut: {
            board: string;
            member: string;
            percentile: number;
        };
        RangeOut: {
            board: string;
            entries: components["schemas"]["EntryOut"][];
            /**
             * @description The board's ranking mode
             * @enum {string}
             */
            ranking: "unique" | "dense" | "competition";
            total: number;
        };
        RankOut: {
            board: string;
            member: string;
            rank: number;
            /**
             * @description The board's ranking mode
             * @enum {string}
             */
            ranking: "unique" | "dense" | "competition";
            score: components["schemas"]["Score"];
        };
        RanksIn: {
            members: string[];
            with_data?: boolean;
        };
        RanksOut: {
            board: string;
            entries: components["schemas"]["EntryOut"][];
            missing: string[];
            /**
             * @description The board's ranking mode
             * @enum {string}
             */
            ranking: "unique" | "dense" | "competition";
        };
        RemoveIn: {
            members: string[];
        };
        RemovedOut: {
            board: string;
            removed: number;
        };
        ResetOut: {
            archive: string;
            archived: number;
            board: string;
        };
        ResortOut: {
            board: string;
            done: number;
            running: boolean;
            total: number;
        };
        /** @description A finite number, or "inf" / "-inf". Strings holding a number are accepted on input; NaN is refused. */
        Score: number | ("inf" | "-inf");
        ScoreAtOut: {
            board: string;
            entry: components["schemas"]["EntryOut"] | null;
            percentile: number;
        };
        /** @description A board with sort keys: each key's value by key name. A number, or a string holding one: JSON carries an int key's value beyond ±2^53 and an infinity as a string. In a submission, keys left out are kept (incr only). */
        Scores: {
            [key: string]: number | string;
        };
        SearchOut: {
            board: string;
            entries: components["schemas"]["EntryOut"][];
            limit: number;
            offset: number;
            query: string;
            /**
             * @description The board's ranking mode
             * @enum {string}
             */
            ranking: "unique" | "dense" | "competition";
            total: number;
        };
        /** @description A field left out or null stays as it is. */
        SetDataIn: {
            data?: Record<string, never> | null;
            /** @description "" clears it */
            name?: string | null;
        };
        SetDataOut: {
            board: string;
            found: boolean;
            member: string;
        };
        SortKey: {
            /** @description No commas or control characters */
            key: string;
            /**
             * @description What an incr submission does to this key
             * @default incr
             * @enum {string|null}
             */
            op?: "incr" | "set" | "max" | "min" | null;
            /**
             * @default desc
             * @enum {string|null}
             */
            order?: "desc" | "asc" | null;
            /**
             * @description int: exact signed 64-bit integers
             * @default float
             * @enum {string|null}
             */
            type?: "float" | "int" | null;
        };
        SubmitBatchOut: {
            board: string;
            results: components["schemas"]["SubmitItem"][];
        };
        /** @description Gives score, or (a board with sort keys) scores: the other one is 409 wrong_kind. */
        SubmitIn: {
            /** @enum {string|null} */
            cond?: "gt" | "lt" | null;
            /** @description A JSON object stored with the member */
            data?: Record<string, never> | null;
            /** @description 1–512 bytes */
            member: string;
            /** @description Display name; "" clears it, null leaves it */
            name?: string | null;
            /** @enum {string|null} */
            only?: "new" | "existing" | null;
            /**
             * @description Default (or null): the board's update
             * @enum {string|null}
             */
            op?: "set" | "best" | "incr" | null;
            score?: components["schemas"]["Score"];
            scores?: components["schemas"]["Scores"] | null;
        };
        SubmitItem: components["schemas"]["SubmitOut"] | {
            error: components["schemas"]["ErrorBody"];
            member: string;
        };
        SubmitOut: {
            applied: boolean;
            changed: boolean;
            created: boolean;
            evicted: number;
            member: string;
            previous: components["schemas"]["Score"] | null;
            previous_scores?: components["schemas"]["Scores"];
            rank: number | null;
            score: components["schemas"]["Score"] | null;
            scores?: components["schemas"]["Scores"];
        };
        TopOut: {
            board: string;
            entries: components["schemas"]["EntryOut"][];
            page: number;
            page_size: number;
            /**
             * @description The board's ranking mode
             * @enum {string}
             */
            ranking: "unique" | "dense" | "competition";
            total: number;
            total_pages: number;
        };
        Webhook: {
            /** @description Every change of these members' rank or score; with neither top nor members, every change */
            members?: string[];
            /** @description The hook's identity on the board: a later hook of the same name replaces an earlier one */
            name: string;
            /** @description Signs each delivery (Podium-Signature: sha256=HMAC-SHA256 of the body, hex). Never read back; left out when writing a config back, the hook of that name keeps its secret */
            secret?: string;
            /** @description Members entering, leaving or moving within the best N places */
            top?: number;
            /**
             * Format: uri
             * @description http:// or https://, no credentials; the address must be one --webhook-targets allows (loopback only by default)
             */
            url: string;
        };
    };
    responses: {
        /** @description An error: 4xx/5xx with its code */
        Error: {
            headers: {
                [name: string]: unknown;
            };
            content: {
                "application/json": components["schemas"]["Error"];
            };
        };
    };
    parameters: {
        /** @description Board name (1–200 bytes of UTF-8 without control characters, percent-encoded) */
        board: components["schemas"]["BoardName"];
        /** @description Count from the best or the worst end */
        from: "best" | "worst";
        /** @description Score bound in Redis syntax: a number, -inf, +inf (or inf), or (number for an exclusive bound. Absent: no upper bound. */
        max: string;
        /** @description Upper score bound in Redis syntax: a number, +inf (or inf), or (number for an exclusive bound */
        max_required: string;
        /** @description Member id (percent-encoded; '/' as %2F). `.` and `..` cannot be sent in a path (URL parsers drop them as dot segments, percent-encoded too): the same route without /{member} takes the member in the query */
        member: string;
        /** @description Member id, any (`.` and `..` too), percent-encoded as a query value; given once */
        member_query: string;
        /** @description Score bound in Redis syntax: a number, -inf, +inf (or inf), or (number for an exclusive bound. Absent: no lower bound. */
        min: string;
        /** @description Lower score bound in Redis syntax: a number, -inf, or (number for an exclusive bound */
        min_required: string;
        /** @description 1-based page number */
        page: number;
        /** @description Entries per page */
        page_size: number;
        /** @description First rank (1-based) */
        start: number;
        /** @description Include each entry's data */
        with_data: boolean;
    };
    requestBodies: never;
    headers: never;
    pathItems: never;
}
export type $defs = Record<string, never>;
export interface operations {
    healthz: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The server is alive (and its storage up, once started) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @enum {string} */
                        backend: "embedded" | "redis";
                        /** @description git's short hash of the source, or unknown */
                        commit: string;
                        /** @enum {string} */
                        status: "ok" | "starting";
                        version: string;
                    };
                };
            };
            default: components["responses"]["Error"];
        };
    };
    metrics: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Metrics */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/plain": string;
                };
            };
            default: components["responses"]["Error"];
        };
    };
    openapi: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description OpenAPI 3.1 document */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": Record<string, never>;
                };
            };
            default: components["responses"]["Error"];
        };
    };
    readyz: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The server serves */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        /** @constant */
                        status: "ready";
                    };
                };
            };
            default: components["responses"]["Error"];
        };
    };
    backup: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The backup as a tar stream */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/x-tar": string;
                };
            };
            default: components["responses"]["Error"];
        };
    };
    boards: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Every board, archives included */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["BoardsOut"];
                };
            };
            default: components["responses"]["Error"];
        };
    };
    board_info: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Board name (1–200 bytes of UTF-8 without control characters, percent-encoded) */
                board: components["parameters"]["board"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The board */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["BoardOut"];
                };
            };
            default: components["responses"]["Error"];
        };
    };
    board_put: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Board name (1–200 bytes of UTF-8 without control characters, percent-encoded) */
                board: components["parameters"]["board"];
            };
            cookie?: never;
        };
        requestBody?: {
            content: {
                "application/json": components["schemas"]["BoardConfig"];
            };
        };
        responses: {
            /** @description Reconfigured */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["BoardOut"];
                };
            };
            /** @description Created */
            201: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["BoardOut"];
                };
            };
            default: components["responses"]["Error"];
        };
    };
    board_delete: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Board name (1–200 bytes of UTF-8 without control characters, percent-encoded) */
                board: components["parameters"]["board"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Deleted */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["DeletedOut"];
                };
            };
            default: components["responses"]["Error"];
        };
    };
    board_patch: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Board name (1–200 bytes of UTF-8 without control characters, percent-encoded) */
                board: components["parameters"]["board"];
            };
            cookie?: never;
        };
        /** @description The fields to change */
        requestBody: {
            content: {
                "application/json": components["schemas"]["BoardPatch"];
            };
        };
        responses: {
            /** @description The board, reconfigured */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["BoardOut"];
                };
            };
            default: components["responses"]["Error"];
        };
    };
    around_by_query: {
        parameters: {
            query: {
                /** @description Member id, any (`.` and `..` too), percent-encoded as a query value; given once */
                member: components["parameters"]["member_query"];
                /** @description Entries per page */
                page_size?: components["parameters"]["page_size"];
                /** @description Include each entry's data */
                with_data?: components["parameters"]["with_data"];
            };
            header?: never;
            path: {
                /** @description Board name (1–200 bytes of UTF-8 without control characters, percent-encoded) */
                board: components["parameters"]["board"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The entries around the member */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AroundOut"];
                };
            };
            default: components["responses"]["Error"];
        };
    };
    around: {
        parameters: {
            query?: {
                /** @description Entries per page */
                page_size?: components["parameters"]["page_size"];
                /** @description Include each entry's data */
                with_data?: components["parameters"]["with_data"];
            };
            header?: never;
            path: {
                /** @description Board name (1–200 bytes of UTF-8 without control characters, percent-encoded) */
                board: components["parameters"]["board"];
                /** @description Member id (percent-encoded; '/' as %2F). `.` and `..` cannot be sent in a path (URL parsers drop them as dot segments, percent-encoded too): the same route without /{member} takes the member in the query */
                member: components["parameters"]["member"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The entries around the member */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["AroundOut"];
                };
            };
            default: components["responses"]["Error"];
        };
    };
    count: {
        parameters: {
            query?: {
                /** @description Score bound in Redis syntax: a number, -inf, +inf (or inf), or (number for an exclusive bound. Absent: no lower bound. */
                min?: components["parameters"]["min"];
                /** @description Score bound in Redis syntax: a number, -inf, +inf (or inf), or (number for an exclusive bound. Absent: no upper bound. */
                max?: components["parameters"]["max"];
            };
            header?: never;
            path: {
                /** @description Board name (1–200 bytes of UTF-8 without control characters, percent-encoded) */
                board: components["parameters"]["board"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The count */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CountOut"];
                };
            };
            default: components["responses"]["Error"];
        };
    };
    subscribe: {
        parameters: {
            query?: {
                /** @description Members entering, leaving or moving within the best N places */
                top?: number;
                /** @description Comma-separated members whose every rank or score change is sent (empty parts are skipped) */
                members?: string;
                /** @description One watched member (repeatable; for ids holding commas) */
                member?: string;
                /** @description Send the current state first */
                snapshot?: boolean;
                /** @description Resume after this event id (Last-Event-ID wins) */
                since?: string;
            };
            header?: never;
            path: {
                /** @description Board name (1–200 bytes of UTF-8 without control characters, percent-encoded) */
                board: components["parameters"]["board"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description An event stream */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "text/event-stream": {
                        data: string;
                        /** @enum {string} */
                        event?: "change" | "enter" | "leave" | "move" | "member" | "reset" | "config" | "created" | "deleted" | "snapshot" | "reload" | "lagged";
                        id?: string;
                        retry?: number;
                    };
                };
            };
            default: components["responses"]["Error"];
        };
    };
    export: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Board name (1–200 bytes of UTF-8 without control characters, percent-encoded) */
                board: components["parameters"]["board"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description NDJSON stream */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/x-ndjson": components["schemas"]["ExportLine"];
                };
            };
            default: components["responses"]["Error"];
        };
    };
    import: {
        parameters: {
            query?: {
                /** @description Default: csv for Content-Type text/csv, else ndjson */
                format?: "ndjson" | "csv";
            };
            header?: never;
            path: {
                /** @description Board name (1–200 bytes of UTF-8 without control characters, percent-encoded) */
                board: components["parameters"]["board"];
            };
            cookie?: never;
        };
        /** @description Text: a line that is not a valid record fails alone (and is reported); an empty body imports nothing. */
        requestBody?: {
            content: {
                "application/x-ndjson": unknown;
                "text/csv": unknown;
            };
        };
        responses: {
            /** @description Counts and the first errors */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ImportOut"];
                };
            };
            default: components["responses"]["Error"];
        };
    };
    intersect: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Board name (1–200 bytes of UTF-8 without control characters, percent-encoded) */
                board: components["parameters"]["board"];
            };
            cookie?: never;
        };
        /** @description Sources, weights, aggregate */
        requestBody: {
            content: {
                "application/json": components["schemas"]["CombineIn"];
            };
        };
        responses: {
            /** @description The destination's size */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CombineOut"];
                };
            };
            default: components["responses"]["Error"];
        };
    };
    entry_by_query: {
        parameters: {
            query: {
                /** @description Member id, any (`.` and `..` too), percent-encoded as a query value; given once */
                member: components["parameters"]["member_query"];
                /** @description Entries per page */
                page_size?: components["parameters"]["page_size"];
            };
            header?: never;
            path: {
                /** @description Board name (1–200 bytes of UTF-8 without control characters, percent-encoded) */
                board: components["parameters"]["board"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The member */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["EntryInfoOut"];
                };
            };
            default: components["responses"]["Error"];
        };
    };
    remove_member_by_query: {
        parameters: {
            query: {
                /** @description Member id, any (`.` and `..` too), percent-encoded as a query value; given once */
                member: components["parameters"]["member_query"];
            };
            header?: never;
            path: {
                /** @description Board name (1–200 bytes of UTF-8 without control characters, percent-encoded) */
                board: components["parameters"]["board"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Removed (404 member_not_found if it was not there) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RemovedOut"];
                };
            };
            default: components["responses"]["Error"];
        };
    };
    set_data_by_query: {
        parameters: {
            query: {
                /** @description Member id, any (`.` and `..` too), percent-encoded as a query value; given once */
                member: components["parameters"]["member_query"];
            };
            header?: never;
            path: {
                /** @description Board name (1–200 bytes of UTF-8 without control characters, percent-encoded) */
                board: components["parameters"]["board"];
            };
            cookie?: never;
        };
        /** @description The fields to set */
        requestBody: {
            content: {
                "application/json": components["schemas"]["SetDataIn"];
            };
        };
        responses: {
            /** @description Set */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SetDataOut"];
                };
            };
            default: components["responses"]["Error"];
        };
    };
    entry: {
        parameters: {
            query?: {
                /** @description Entries per page */
                page_size?: components["parameters"]["page_size"];
            };
            header?: never;
            path: {
                /** @description Board name (1–200 bytes of UTF-8 without control characters, percent-encoded) */
                board: components["parameters"]["board"];
                /** @description Member id (percent-encoded; '/' as %2F). `.` and `..` cannot be sent in a path (URL parsers drop them as dot segments, percent-encoded too): the same route without /{member} takes the member in the query */
                member: components["parameters"]["member"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The member */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["EntryInfoOut"];
                };
            };
            default: components["responses"]["Error"];
        };
    };
    remove_member: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Board name (1–200 bytes of UTF-8 without control characters, percent-encoded) */
                board: components["parameters"]["board"];
                /** @description Member id (percent-encoded; '/' as %2F). `.` and `..` cannot be sent in a path (URL parsers drop them as dot segments, percent-encoded too): the same route without /{member} takes the member in the query */
                member: components["parameters"]["member"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Removed (404 member_not_found if it was not there) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RemovedOut"];
                };
            };
            default: components["responses"]["Error"];
        };
    };
    set_data: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Board name (1–200 bytes of UTF-8 without control characters, percent-encoded) */
                board: components["parameters"]["board"];
                /** @description Member id (percent-encoded; '/' as %2F). `.` and `..` cannot be sent in a path (URL parsers drop them as dot segments, percent-encoded too): the same route without /{member} takes the member in the query */
                member: components["parameters"]["member"];
            };
            cookie?: never;
        };
        /** @description The fields to set */
        requestBody: {
            content: {
                "application/json": components["schemas"]["SetDataIn"];
            };
        };
        responses: {
            /** @description Set */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SetDataOut"];
                };
            };
            default: components["responses"]["Error"];
        };
    };
    merge: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Board name (1–200 bytes of UTF-8 without control characters, percent-encoded) */
                board: components["parameters"]["board"];
            };
            cookie?: never;
        };
        /** @description Sources, weights, aggregate */
        requestBody: {
            content: {
                "application/json": components["schemas"]["CombineIn"];
            };
        };
        responses: {
            /** @description The destination's size */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["CombineOut"];
                };
            };
            default: components["responses"]["Error"];
        };
    };
    percentile_by_query: {
        parameters: {
            query: {
                /** @description Member id, any (`.` and `..` too), percent-encoded as a query value; given once */
                member: components["parameters"]["member_query"];
            };
            header?: never;
            path: {
                /** @description Board name (1–200 bytes of UTF-8 without control characters, percent-encoded) */
                board: components["parameters"]["board"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The share of the board (0–100) the member is at least as good as */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PercentileOut"];
                };
            };
            default: components["responses"]["Error"];
        };
    };
    percentile: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Board name (1–200 bytes of UTF-8 without control characters, percent-encoded) */
                board: components["parameters"]["board"];
                /** @description Member id (percent-encoded; '/' as %2F). `.` and `..` cannot be sent in a path (URL parsers drop them as dot segments, percent-encoded too): the same route without /{member} takes the member in the query */
                member: components["parameters"]["member"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The share of the board (0–100) the member is at least as good as */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["PercentileOut"];
                };
            };
            default: components["responses"]["Error"];
        };
    };
    range_by_rank: {
        parameters: {
            query: {
                /** @description First rank (1-based) */
                start: components["parameters"]["start"];
                /** @description Places to read */
                count?: number;
                /** @description Count from the best or the worst end */
                from?: components["parameters"]["from"];
                /** @description Include each entry's data */
                with_data?: components["parameters"]["with_data"];
            };
            header?: never;
            path: {
                /** @description Board name (1–200 bytes of UTF-8 without control characters, percent-encoded) */
                board: components["parameters"]["board"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The entries */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RangeOut"];
                };
            };
            default: components["responses"]["Error"];
        };
    };
    remove_range_by_rank: {
        parameters: {
            query: {
                /** @description First rank (1-based) */
                start: components["parameters"]["start"];
                /** @description Places to remove */
                count: number;
            };
            header?: never;
            path: {
                /** @description Board name (1–200 bytes of UTF-8 without control characters, percent-encoded) */
                board: components["parameters"]["board"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description How many were removed */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RemovedOut"];
                };
            };
            default: components["responses"]["Error"];
        };
    };
    range_by_score: {
        parameters: {
            query?: {
                /** @description Score bound in Redis syntax: a number, -inf, +inf (or inf), or (number for an exclusive bound. Absent: no lower bound. */
                min?: components["parameters"]["min"];
                /** @description Score bound in Redis syntax: a number, -inf, +inf (or inf), or (number for an exclusive bound. Absent: no upper bound. */
                max?: components["parameters"]["max"];
                /** @description Count from the best or the worst end */
                from?: components["parameters"]["from"];
                /** @description Entries to skip */
                offset?: number;
                /** @description Most entries to return (more than 1000000 reads 1000000) */
                limit?: number;
                /** @description Include each entry's data */
                with_data?: components["parameters"]["with_data"];
            };
            header?: never;
            path: {
                /** @description Board name (1–200 bytes of UTF-8 without control characters, percent-encoded) */
                board: components["parameters"]["board"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The entries */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RangeOut"];
                };
            };
            default: components["responses"]["Error"];
        };
    };
    remove_range_by_score: {
        parameters: {
            query: {
                /** @description Lower score bound in Redis syntax: a number, -inf, or (number for an exclusive bound */
                min: components["parameters"]["min_required"];
                /** @description Upper score bound in Redis syntax: a number, +inf (or inf), or (number for an exclusive bound */
                max: components["parameters"]["max_required"];
            };
            header?: never;
            path: {
                /** @description Board name (1–200 bytes of UTF-8 without control characters, percent-encoded) */
                board: components["parameters"]["board"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description How many were removed */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RemovedOut"];
                };
            };
            default: components["responses"]["Error"];
        };
    };
    rank_by_query: {
        parameters: {
            query: {
                /** @description Member id, any (`.` and `..` too), percent-encoded as a query value; given once */
                member: components["parameters"]["member_query"];
            };
            header?: never;
            path: {
                /** @description Board name (1–200 bytes of UTF-8 without control characters, percent-encoded) */
                board: components["parameters"]["board"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The rank */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RankOut"];
                };
            };
            default: components["responses"]["Error"];
        };
    };
    rank: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Board name (1–200 bytes of UTF-8 without control characters, percent-encoded) */
                board: components["parameters"]["board"];
                /** @description Member id (percent-encoded; '/' as %2F). `.` and `..` cannot be sent in a path (URL parsers drop them as dot segments, percent-encoded too): the same route without /{member} takes the member in the query */
                member: components["parameters"]["member"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The rank */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RankOut"];
                };
            };
            default: components["responses"]["Error"];
        };
    };
    ranks: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Board name (1–200 bytes of UTF-8 without control characters, percent-encoded) */
                board: components["parameters"]["board"];
            };
            cookie?: never;
        };
        /** @description The members */
        requestBody: {
            content: {
                "application/json": components["schemas"]["RanksIn"];
            };
        };
        responses: {
            /** @description Found members in board order, and the missing ones */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RanksOut"];
                };
            };
            default: components["responses"]["Error"];
        };
    };
    remove: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Board name (1–200 bytes of UTF-8 without control characters, percent-encoded) */
                board: components["parameters"]["board"];
            };
            cookie?: never;
        };
        /** @description The members */
        requestBody: {
            content: {
                "application/json": components["schemas"]["RemoveIn"];
            };
        };
        responses: {
            /** @description How many were removed */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["RemovedOut"];
                };
            };
            default: components["responses"]["Error"];
        };
    };
    reset: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Board name (1–200 bytes of UTF-8 without control characters, percent-encoded) */
                board: components["parameters"]["board"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The archive made */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ResetOut"];
                };
            };
            default: components["responses"]["Error"];
        };
    };
    resort_status: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Board name (1–200 bytes of UTF-8 without control characters, percent-encoded) */
                board: components["parameters"]["board"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The progress */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ResortOut"];
                };
            };
            default: components["responses"]["Error"];
        };
    };
    score_at_percentile: {
        parameters: {
            query: {
                /** @description Percentile, 0 to 100 */
                p: number;
            };
            header?: never;
            path: {
                /** @description Board name (1–200 bytes of UTF-8 without control characters, percent-encoded) */
                board: components["parameters"]["board"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The entry (null on an empty board) */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["ScoreAtOut"];
                };
            };
            default: components["responses"]["Error"];
        };
    };
    submit: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description Board name (1–200 bytes of UTF-8 without control characters, percent-encoded) */
                board: components["parameters"]["board"];
            };
            cookie?: never;
        };
        /** @description An entry or an array of entries */
        requestBody: {
            content: {
                "application/json": components["schemas"]["SubmitIn"] | components["schemas"]["SubmitIn"][];
            };
        };
        responses: {
            /** @description SubmitOut for an object, SubmitBatchOut for an array */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SubmitOut"] | components["schemas"]["SubmitBatchOut"];
                };
            };
            default: components["responses"]["Error"];
        };
    };
    search: {
        parameters: {
            query: {
                /** @description The query (one with no word matches nothing) */
                q: string;
                /** @description Most entries to return */
                limit?: number;
                /** @description Matches to skip */
                offset?: number;
                /** @description Include each entry's data */
                with_data?: components["parameters"]["with_data"];
            };
            header?: never;
            path: {
                /** @description Board name (1–200 bytes of UTF-8 without control characters, percent-encoded) */
                board: components["parameters"]["board"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The matching entries */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["SearchOut"];
                };
            };
            default: components["responses"]["Error"];
        };
    };
    top: {
        parameters: {
            query?: {
                /** @description 1-based page number */
                page?: components["parameters"]["page"];
                /** @description Entries per page */
                page_size?: components["parameters"]["page_size"];
                /** @description Include each entry's data */
                with_data?: components["parameters"]["with_data"];
            };
            header?: never;
            path: {
                /** @description Board name (1–200 bytes of UTF-8 without control characters, percent-encoded) */
                board: components["parameters"]["board"];
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The page */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["TopOut"];
                };
            };
            default: components["responses"]["Error"];
        };
    };
    key_info: {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description The key's scope */
            200: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    "application/json": {
                        keys: boolean;
                        /** @enum {string} */
                        scope: "read" | "write" | "admin";
                    };
                };
            };
            default: components["responses"]["Error"];
        };
    };
}
